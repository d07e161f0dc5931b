import type { PayloadError } from '@ots/shared/errors';
import { parseUuid, receiveId } from '@ots/shared/ids';
import { decodeKeysetCursor, encodeKeysetCursor, pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar, DecimalScalar, SignedDecimalScalar } from '@ots/shared/scalars';
import type { FillsLoaders } from './context.ts';
import type { FillFilter as FillFilterInput, Resolvers } from './generated/resolvers-types.ts';
import { recordFill } from './operations.ts';
import { computePositions } from './positions.ts';
import { fillObject, type FillObject } from './mappers.ts';
import { listAppliedFills, type FillFilter } from './repository.ts';

/** The tag of listFills' cursors: kept as first issued, so that cursors clients hold stay valid. */
export const FILLS_ORDERING = 'fills.executedAt.desc';

export function fillCursor(fill: FillObject): string {
  return encodeKeysetCursor(FILLS_ORDERING, { at: fill.executedAt, id: fill.id });
}

/**
 * The filter argument as listFills' query takes it: ids parsed, the symbol upper-cased as symbols
 * are stored. A member that is null or absent does not filter; any other value does, the empty
 * string included (the conditions combine with AND, so one that nothing matches empties the list).
 * Undefined when no fill can match, e.g. an id that is not a UUID.
 */
export function receiveFillFilter(input: FillFilterInput | null | undefined): FillFilter | undefined {
  const filter: FillFilter = {};
  if (!input) return filter;
  if (input.orderSubmissionId !== null && input.orderSubmissionId !== undefined) {
    const orderSubmissionId = parseUuid(input.orderSubmissionId);
    if (!orderSubmissionId) return undefined;
    filter.orderSubmissionId = orderSubmissionId;
  }
  if (input.strategyId !== null && input.strategyId !== undefined) {
    const strategyId = parseUuid(input.strategyId);
    if (!strategyId) return undefined;
    filter.strategyId = strategyId;
  }
  if (input.symbol !== null && input.symbol !== undefined) filter.symbol = input.symbol.toUpperCase();
  if (input.executedAfter !== null && input.executedAfter !== undefined) filter.executedAfter = input.executedAfter;
  if (input.executedBefore !== null && input.executedBefore !== undefined) filter.executedBefore = input.executedBefore;
  return filter;
}

/** A fill of the caller's account by the id a client or the gateway sent; null when it names none. */
async function appliedFill(loaders: FillsLoaders, sentId: string): Promise<FillObject | null> {
  const id = parseUuid(sentId);
  const row = id ? await loaders.appliedFillById.load(id) : null;
  return row ? fillObject(row) : null;
}

function errorPayload(error: PayloadError) {
  return { fill: null, orderSubmission: null, error };
}

export const resolvers: Resolvers = {
  Decimal: DecimalScalar,
  SignedDecimal: SignedDecimalScalar,
  DateTime: DateTimeScalar,
  Query: {
    fill: (_, { id }, { loaders }) => appliedFill(loaders, id),
    listFills: async (_, { filter, first, after }, { db, caller }) => {
      const size = pageSize(first);
      const position = decodeKeysetCursor(FILLS_ORDERING, after);
      // Undefined: a condition no fill can meet, e.g. an id that is not a UUID.
      const conditions = receiveFillFilter(filter);
      const rows = conditions ? await listAppliedFills(db, caller.accountId, conditions, { after: position, limit: size + 1 }) : [];
      return toConnection(rows.map(fillObject), size, fillCursor);
    },
  },
  Mutation: {
    recordFill: async (_, { input }, context) => {
      const result = await recordFill(context, context.caller, { ...input, orderSubmissionId: receiveId(input.orderSubmissionId) });
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
    __resolveReference: ({ id }, { loaders }) => appliedFill(loaders, id),
    orderSubmission: (fill) => ({ id: fill.orderSubmissionId }),
  },
  OrderSubmission: {
    __resolveReference: ({ id }) => ({ id }),
    fills: async ({ id }, _, { loaders }) => {
      const orderSubmissionId = parseUuid(id);
      return orderSubmissionId ? (await loaders.appliedFillsByOrder.load(orderSubmissionId)).map(fillObject) : [];
    },
  },
  Strategy: {
    __resolveReference: ({ id }) => ({ id }),
    positions: async ({ id }, _, { loaders }) => {
      const strategyId = parseUuid(id);
      const fills = strategyId ? await loaders.appliedFillsByStrategy.load(strategyId) : [];
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
