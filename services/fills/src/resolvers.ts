import type { PayloadError } from '@ots/shared/errors';
import { parseUuid, receiveId } from '@ots/shared/ids';
import { pageSize } from '@ots/shared/pagination';
import type { AccountKeysetCursors } from '@ots/shared/sealed-cursors';
import { DateTimeScalar, DecimalScalar, SignedDecimalScalar } from '@ots/shared/scalars';
import type { FillsLoaders } from './context.ts';
import { normaliseFilter } from './domain.ts';
import type { QueryListFillsArgs, Resolvers } from './generated/resolvers-types.ts';
import { listFills, recordFill, type ListRequest } from './operations.ts';
import { computePositions } from './positions.ts';
import { fillObject, type FillObject } from './mappers.ts';

/** listFills' arguments as the use case takes them. A bad `first` or cursor is a top-level BAD_USER_INPUT, checked in that order. */
function listRequest(args: QueryListFillsArgs, cursors: AccountKeysetCursors): ListRequest {
  const size = pageSize(args.first);
  return { size, after: cursors.decode(args.after), filter: normaliseFilter(args.filter), cursors };
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
    listFills: (_, args, { scope, fillCursors }) => listFills(scope, listRequest(args, fillCursors)),
  },
  Mutation: {
    recordFill: async (_, { input }, context) => {
      const result = await recordFill(context.scope, { ...input, orderSubmissionId: receiveId(input.orderSubmissionId) });
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
