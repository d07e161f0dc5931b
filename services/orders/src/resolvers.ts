import { badUserInput, payloadError, TEMPORARILY_UNAVAILABLE_MESSAGE, type PayloadError, type Result } from '@ots/shared/errors';
import { parseUuid, receiveId, type ReceivedId } from '@ots/shared/ids';
import { pageSize, type Connection } from '@ots/shared/pagination';
import { DateTimeScalar, DecimalScalar } from '@ots/shared/scalars';
import type { OrdersContext } from './context.ts';
import { checkFill, normaliseFilter, positionAfter, type OrderListCursors } from './domain.ts';
import type { OrderSubmissionFilter, OrderSubmissionOrder, Resolvers } from './generated/resolvers-types.ts';
import {
  applyFill,
  cancelOrderSubmission,
  cancelOrderSubmissions,
  replaceOrderSubmission,
  listOrderSubmissions,
  submitOrder,
  type ListRequest,
} from './operations.ts';
import { orderView, recordedFillView, type OrderView } from './mappers.ts';
import type { OrderRow } from './repository.ts';

/**
 * The resolver edge: every id, cursor and page size is parsed here, once, into the types the use
 * cases take (`Uuid`, `ReceivedId`, a decoded position), so a value that names no row never
 * reaches a query.
 */

/** An optional id argument as received: absent, or the UUID it names (if any) and the text sent. */
function received(id: string | null | undefined): ReceivedId | null {
  return id === null || id === undefined ? null : receiveId(id);
}

export interface ListArguments {
  filter?: OrderSubmissionFilter | null;
  orderBy?: OrderSubmissionOrder | null;
  first?: number | null;
  after?: string | null;
}

/** A list's arguments as the use cases take them. A bad `first` or cursor is a top-level BAD_USER_INPUT, checked in that order. */
export function listRequest(args: ListArguments, cursors: OrderListCursors): ListRequest {
  const size = pageSize(args.first);
  const position = positionAfter(args.orderBy ?? 'SUBMITTED_AT_DESC', args.after, cursors);
  const filter = normaliseFilter(args.filter && { ...args.filter, strategyId: received(args.filter.strategyId) });
  return { filter, position, size, cursors };
}

function viewOrNull(row: OrderRow | null | undefined) {
  return row ? orderView(row) : null;
}

function connectionView(connection: Connection<OrderRow>) {
  const edges = connection.edges.map((edge) => ({
    node: orderView(edge.node),
    // Read only if the client asks for it (pagination.ts `toConnection`).
    get cursor() {
      return edge.cursor;
    },
  }));
  return { nodes: edges.map((edge) => edge.node), edges, pageInfo: connection.pageInfo };
}

function orderPayload(result: Result<OrderRow>): { orderSubmission: OrderView | null; error: PayloadError | null } {
  return result.ok ? { orderSubmission: orderView(result.value), error: null } : { orderSubmission: null, error: result.error };
}

/** An id that is not a UUID names no order: null, and Postgres never sees it. */
async function loadOrder(context: OrdersContext, id: string) {
  const uuid = parseUuid(id);
  return uuid === undefined ? null : viewOrNull(await context.orderById.load(uuid));
}

export const resolvers: Resolvers = {
  Decimal: DecimalScalar,
  DateTime: DateTimeScalar,
  Query: {
    listOrderSubmissions: async (_, args, context) => connectionView(await listOrderSubmissions(context.scope, listRequest(args, context.listCursors))),
    orderSubmission: (_, { id }, context) => loadOrder(context, id),
  },
  Mutation: {
    submitOrder: async (_, { input }, context) =>
      orderPayload(
        await submitOrder({ ...context.scope, lookupStrategy: context.lookupStrategy }, { ...input, strategyId: received(input.strategyId) }),
      ),
    cancelOrderSubmission: async (_, { id }, context) => orderPayload(await cancelOrderSubmission(context.scope, receiveId(id))),
    replaceOrderSubmission: async (_, { id, input }, context) => {
      const result = await replaceOrderSubmission(context.scope, receiveId(id), input);
      return result.ok
        ? { orderSubmission: orderView(result.value.order), replacedOrderSubmission: orderView(result.value.replaced), error: null }
        : { orderSubmission: null, replacedOrderSubmission: null, error: result.error };
    },
    cancelOrderSubmissions: async (_, { filter }, context) => {
      const result = await cancelOrderSubmissions(context.scope, filter && { ...filter, strategyId: received(filter.strategyId) });
      if (result.interruptedBy) context.log.warn({ err: result.interruptedBy, path: ['cancelOrderSubmissions'] }, 'a dependency did not answer');
      return {
        cancelledCount: result.cancelled.length,
        orderSubmissions: result.cancelled.map(orderView),
        hasMore: result.hasMore,
        error: result.interruptedBy ? payloadError('TEMPORARILY_UNAVAILABLE', TEMPORARILY_UNAVAILABLE_MESSAGE) : null,
      };
    },
    applyFill: async (_, { input }, context) => {
      const refused = checkFill(input);
      if (refused) throw badUserInput(refused, 'input');
      const result = await applyFill(context.scope, { ...input, orderSubmissionId: parseUuid(input.orderSubmissionId) });
      return { outcome: result.outcome, fill: result.fill && recordedFillView(result.fill), orderSubmission: viewOrNull(result.order) };
    },
  },
  OrderSubmission: {
    __resolveReference: (reference, context) => loadOrder(context, reference.id),
    replacedBy: async (order, _, context) =>
      order.replacedByOrderSubmissionId === null ? null : viewOrNull(await context.orderById.load(order.replacedByOrderSubmissionId)),
    replacesOrderSubmission: async (order, _, context) =>
      order.replacesOrderSubmissionId === null ? null : viewOrNull(await context.orderById.load(order.replacesOrderSubmissionId)),
  },
  Strategy: {
    __resolveReference: (reference) => ({ id: reference.id }),
    orderSubmissions: async ({ id }, args, context) => connectionView(await context.strategyOrders(parseUuid(id), listRequest(args, context.listCursors))),
  },
};
