import type DataLoader from 'dataloader';
import { badUserInput, type PayloadError } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { loaderById, loaderOfGroups } from '@ots/shared/loaders';
import { decodeCursor, encodeCursor, pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar, DecimalScalar, SignedDecimalScalar } from '@ots/shared/scalars';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { RecordFillInput } from './domain.ts';
import type { OrdersLink } from './orders-client.ts';
import { computePositions } from './positions.ts';
import { recordFill } from './recording.ts';
import {
  findAppliedFills,
  findAppliedFillsOfOrders,
  findAppliedFillsOfStrategies,
  listAppliedFills,
  type FillFilter,
  type FillKeyset,
  type FillRow,
  type FillsDb,
  type PositionFillRow,
} from './repository.ts';

export interface FillsLoaders {
  appliedFillById: DataLoader<string, FillRow | null>;
  appliedFillsByOrder: DataLoader<string, FillRow[]>;
  appliedFillsByStrategy: DataLoader<string, PositionFillRow[]>;
}

export interface FillsContext extends BaseContext {
  db: FillsDb;
  /** The orders subgraph, called with this request's assertion. */
  orders: OrdersLink;
  loaders: FillsLoaders;
}

/** Per request: each loader turns the lookups of one gateway fetch into one query, scoped to the caller. */
export function createLoaders(db: FillsDb, accountId: string): FillsLoaders {
  return {
    appliedFillById: loaderById((ids) => findAppliedFills(db, accountId, ids)),
    appliedFillsByOrder: loaderOfGroups(
      (orderIds) => findAppliedFillsOfOrders(db, accountId, orderIds),
      (fill) => fill.order_submission_id,
    ),
    appliedFillsByStrategy: loaderOfGroups(
      (strategyIds) => findAppliedFillsOfStrategies(db, accountId, strategyIds),
      (fill) => fill.strategy_id ?? '',
    ),
  };
}

interface FillObject {
  id: string;
  orderSubmissionId: string;
  executionId: string;
  symbol: string;
  side: string;
  quantity: string;
  price: string;
  fee: string;
  liquidity: string;
  executedAt: Date;
  recordedAt: Date;
}

function fillObject(row: FillRow): FillObject {
  return {
    id: row.id,
    orderSubmissionId: row.order_submission_id,
    executionId: row.execution_id,
    symbol: row.symbol,
    side: row.side,
    quantity: row.quantity,
    price: row.price,
    fee: row.fee,
    liquidity: row.liquidity,
    executedAt: row.executed_at,
    recordedAt: row.recorded_at,
  };
}

/** Clients may spell a UUID in upper case; Postgres hands ids back in lower case. */
function normalizedId(id: string): string {
  return isUuid(id) ? id.toLowerCase() : id;
}

const FILLS_ORDERING = 'fills.executedAt.desc';

function keysetOf(after: string | null | undefined): FillKeyset | undefined {
  const keys = decodeCursor(after, FILLS_ORDERING, 2);
  if (!keys) return undefined;
  const [executedAt, id] = keys as [string, string];
  const instant = new Date(executedAt);
  if (Number.isNaN(instant.getTime()) || !isUuid(id)) throw badUserInput('after is not a cursor issued for this list', 'after');
  return { executedAt: instant, id };
}

interface ListFillsArgs {
  filter?: FillFilter | null;
  first?: number | null;
  after?: string | null;
}

function errorPayload(error: PayloadError) {
  return { fill: null, orderSubmission: null, error };
}

export const resolvers = {
  Decimal: DecimalScalar,
  SignedDecimal: SignedDecimalScalar,
  DateTime: DateTimeScalar,
  Query: {
    fill: async (_: unknown, { id }: { id: string }, { loaders }: FillsContext) => {
      const row = await loaders.appliedFillById.load(normalizedId(id));
      return row ? fillObject(row) : null;
    },
    listFills: async (_: unknown, { filter, first, after }: ListFillsArgs, { db, caller }: FillsContext) => {
      const size = pageSize(first);
      const keyset = keysetOf(after);
      const rows = await listAppliedFills(
        db,
        caller.accountId,
        {
          orderSubmissionId: filter?.orderSubmissionId ? normalizedId(filter.orderSubmissionId) : null,
          strategyId: filter?.strategyId ? normalizedId(filter.strategyId) : null,
          symbol: filter?.symbol ? filter.symbol.toUpperCase() : null,
          executedAfter: filter?.executedAfter ?? null,
          executedBefore: filter?.executedBefore ?? null,
        },
        size + 1,
        keyset,
      );
      return toConnection(rows.map(fillObject), size, (fill) => encodeCursor(FILLS_ORDERING, [fill.executedAt.toISOString(), fill.id]));
    },
  },
  Mutation: {
    recordFill: async (_: unknown, { input }: { input: RecordFillInput }, context: FillsContext) => {
      const result = await recordFill(context, context.caller, input);
      if (!result.ok) return errorPayload(result.error);
      return {
        fill: fillObject(result.value),
        // A reference: the gateway fetches the order's state from orders, where the fill is already committed.
        orderSubmission: { id: result.value.order_submission_id },
        error: null,
      };
    },
  },
  Fill: {
    __resolveReference: async ({ id }: { id: string }, { loaders }: FillsContext) => {
      const row = await loaders.appliedFillById.load(normalizedId(id));
      return row ? fillObject(row) : null;
    },
    orderSubmission: (fill: FillObject) => ({ id: fill.orderSubmissionId }),
  },
  OrderSubmission: {
    __resolveReference: ({ id }: { id: string }) => ({ id }),
    fills: async ({ id }: { id: string }, _: unknown, { loaders }: FillsContext) =>
      (await loaders.appliedFillsByOrder.load(id)).map(fillObject),
  },
  Strategy: {
    __resolveReference: ({ id }: { id: string }) => ({ id }),
    positions: async ({ id }: { id: string }, _: unknown, { loaders }: FillsContext) => {
      const fills = await loaders.appliedFillsByStrategy.load(id);
      return computePositions(
        fills.map((fill) => ({
          id: fill.id,
          symbol: fill.symbol,
          side: fill.side,
          quantity: fill.quantity,
          price: fill.price,
          fee: fill.fee,
          executedAt: fill.executed_at,
        })),
      );
    },
  },
};
