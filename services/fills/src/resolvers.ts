import type DataLoader from 'dataloader';
import type { PayloadError } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { loaderById, loaderOfGroups } from '@ots/shared/loaders';
import { pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar, DecimalScalar, SignedDecimalScalar } from '@ots/shared/scalars';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { Resolvers } from './generated/resolvers-types.ts';
import { cursorOf, normaliseFillFilter, parseCursor } from './listing.ts';
import type { OrdersLink } from './orders-client.ts';
import { computePositions } from './positions.ts';
import { recordFill } from './recording.ts';
import {
  findAppliedFills,
  findAppliedFillsOfOrders,
  findAppliedFillsOfStrategies,
  listAppliedFills,
  type AppliedFillRow,
  type FillsDb,
  type PositionFillRow,
} from './repository.ts';

export interface FillsLoaders {
  appliedFillById: DataLoader<string, AppliedFillRow | null>;
  appliedFillsByOrder: DataLoader<string, AppliedFillRow[]>;
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

/** The parent of Fill's own resolvers. */
export interface FillObject {
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

function fillObject(row: AppliedFillRow): FillObject {
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

function errorPayload(error: PayloadError) {
  return { fill: null, orderSubmission: null, error };
}

export const resolvers: Resolvers = {
  Decimal: DecimalScalar,
  SignedDecimal: SignedDecimalScalar,
  DateTime: DateTimeScalar,
  Query: {
    fill: async (_, { id }, { loaders }) => {
      const row = await loaders.appliedFillById.load(normalizedId(id));
      return row ? fillObject(row) : null;
    },
    listFills: async (_, { filter, first, after }, { db, caller }) => {
      const size = pageSize(first);
      const keyset = parseCursor(after);
      // Undefined: a condition no fill can meet, e.g. an id that is not a UUID.
      const normalised = normaliseFillFilter(filter);
      const rows = normalised ? await listAppliedFills(db, caller.accountId, normalised, size + 1, keyset) : [];
      return toConnection(rows.map(fillObject), size, cursorOf);
    },
  },
  Mutation: {
    recordFill: async (_, { input }, context) => {
      const result = await recordFill(context, context.caller, input);
      if (!result.ok) return errorPayload(result.error);
      return {
        fill: fillObject(result.value.fill),
        // The order's state as orders committed it with the fill: the fields this subgraph `@provides`.
        orderSubmission: result.value.order,
        error: null,
      };
    },
  },
  Fill: {
    __resolveReference: async ({ id }, { loaders }) => {
      const row = await loaders.appliedFillById.load(normalizedId(id));
      return row ? fillObject(row) : null;
    },
    orderSubmission: (fill) => ({ id: fill.orderSubmissionId }),
  },
  OrderSubmission: {
    __resolveReference: ({ id }) => ({ id }),
    fills: async ({ id }, _, { loaders }) =>
      (await loaders.appliedFillsByOrder.load(id)).map(fillObject),
  },
  Strategy: {
    __resolveReference: ({ id }) => ({ id }),
    positions: async ({ id }, _, { loaders }) => {
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
