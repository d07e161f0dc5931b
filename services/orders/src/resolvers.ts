import { Decimal, formatDecimal } from '@ots/shared/decimal';
import type { PayloadError, Result } from '@ots/shared/errors';
import { applyFillRoute, type OrderAfterFill } from '@ots/shared/fill-application';
import { parseUuid, receiveId, type ReceivedId } from '@ots/shared/ids';
import { pageSize, type Connection } from '@ots/shared/pagination';
import { DateTimeScalar, DecimalScalar } from '@ots/shared/scalars';
import { callerRoute, type CallerRoute } from '@ots/shared/subgraph-server';
import type { OrdersContext } from './context.ts';
import { averageFillPrice, normaliseFilter, positionAfter, remainingQuantity } from './domain.ts';
import type { OrderSubmissionFilter, OrderSubmissionOrder, Resolvers } from './generated/resolvers-types.ts';
import {
  applyFill,
  cancelOrderSubmission,
  cancelOrderSubmissions,
  replaceOrderSubmission,
  fillStateOf,
  listOrderSubmissions,
  submitOrder,
  type ListRequest,
} from './operations.ts';
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
export function listRequest(args: ListArguments): ListRequest {
  const size = pageSize(args.first);
  const position = positionAfter(args.orderBy ?? 'SUBMITTED_AT_DESC', args.after);
  const filter = normaliseFilter(args.filter && { ...args.filter, strategyId: received(args.filter.strategyId) });
  return { filter, position, size };
}

/** The OrderSubmission object as the schema shows it. */
function orderView(row: OrderRow) {
  const fillState = fillStateOf(row);
  return {
    id: row.id,
    clientOrderId: row.client_order_id,
    // A reference the strategies subgraph resolves; orders only knows the id it stored.
    strategy: row.strategy_id === null ? null : { __typename: 'Strategy' as const, id: row.strategy_id },
    symbol: row.symbol,
    side: row.side,
    type: row.type,
    timeInForce: row.time_in_force,
    quantity: fillState.quantity,
    limitPrice: row.limit_price === null ? null : new Decimal(row.limit_price),
    stopPrice: row.stop_price === null ? null : new Decimal(row.stop_price),
    status: row.status,
    filledQuantity: fillState.filledQuantity,
    remainingQuantity: remainingQuantity(fillState),
    averageFillPrice: averageFillPrice(fillState),
    submittedAt: row.submitted_at,
    updatedAt: row.updated_at,
    cancelledAt: row.cancelled_at,
    replacedAt: row.replaced_at,
    replacedBy: row.replaced_by,
    replacesOrderSubmission: row.replaces_id,
  };
}

/** The parent of OrderSubmission's own resolvers: every row becomes a GraphQL object through `orderView`. */
export type OrderView = ReturnType<typeof orderView>;

function viewOrNull(row: OrderRow | null | undefined) {
  return row ? orderView(row) : null;
}

function connectionView(connection: Connection<OrderRow>) {
  const edges = connection.edges.map((edge) => ({ cursor: edge.cursor, node: orderView(edge.node) }));
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
    listOrderSubmissions: async (_, args, context) => connectionView(await listOrderSubmissions(context.scope, listRequest(args))),
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
      return { cancelledCount: result.cancelled.length, orderSubmissions: result.cancelled.map(orderView), hasMore: result.hasMore, error: null };
    },
  },
  OrderSubmission: {
    __resolveReference: (reference, context) => loadOrder(context, reference.id),
    replacedBy: async (order, _, context) => (order.replacedBy === null ? null : viewOrNull(await context.orderById.load(order.replacedBy))),
    replacesOrderSubmission: async (order, _, context) =>
      order.replacesOrderSubmission === null ? null : viewOrNull(await context.orderById.load(order.replacesOrderSubmission)),
  },
  Strategy: {
    __resolveReference: (reference) => ({ id: reference.id }),
    orderSubmissions: async ({ id }, args, context) => connectionView(await context.strategyOrders(parseUuid(id), listRequest(args))),
  },
};

/** The order in the wire form of `applyFillRoute`'s answer: the schema's scalars as they serialize. */
function orderAfterFill(row: OrderRow): OrderAfterFill {
  const view = orderView(row);
  const decimalOrNull = (value: Decimal | null) => (value === null ? null : formatDecimal(value));
  const instantOrNull = (value: Date | null) => (value === null ? null : value.toISOString());
  const referenceOrNull = (id: string | null) => (id === null ? null : { id });
  return {
    ...view,
    quantity: formatDecimal(view.quantity),
    limitPrice: decimalOrNull(view.limitPrice),
    stopPrice: decimalOrNull(view.stopPrice),
    filledQuantity: formatDecimal(view.filledQuantity),
    remainingQuantity: formatDecimal(view.remainingQuantity),
    averageFillPrice: decimalOrNull(view.averageFillPrice),
    submittedAt: view.submittedAt.toISOString(),
    updatedAt: view.updatedAt.toISOString(),
    cancelledAt: instantOrNull(view.cancelledAt),
    replacedAt: instantOrNull(view.replacedAt),
    strategy: referenceOrNull(row.strategy_id),
    replacesOrderSubmission: referenceOrNull(view.replacesOrderSubmission),
    replacedBy: referenceOrNull(view.replacedBy),
  };
}

/** What the fills subgraph calls beside GraphQL (shared/src/fill-application.ts says why). */
export const callerRoutes: CallerRoute<OrdersContext>[] = [
  callerRoute(applyFillRoute, async (fill, context) => {
    const result = await applyFill(context.scope, { ...fill, orderSubmissionId: parseUuid(fill.orderSubmissionId) });
    return { outcome: result.outcome, orderSubmission: result.order && orderAfterFill(result.order) };
  }),
];
