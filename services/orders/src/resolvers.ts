import { Decimal } from '@ots/shared/decimal';
import { badUserInput, type PayloadError, type Result } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import type { Connection } from '@ots/shared/pagination';
import { DateTimeScalar, DecimalScalar } from '@ots/shared/scalars';
import type { BaseContext } from '@ots/shared/subgraph-server';
import { averageFillPrice, checkFill, remainingQuantity } from './domain.ts';
import type { Resolvers } from './generated/resolvers-types.ts';
import {
  applyFill,
  cancelOrderSubmission,
  cancelOrderSubmissions,
  replaceOrderSubmission,
  fillStateOf,
  listOrderSubmissions,
  submitOrder,
  type ListArguments,
} from './operations.ts';
import type { OrderRow, OrdersDb } from './repository.ts';
import type { StrategyLookup } from './strategy-lookup.ts';

export interface OrdersContext extends BaseContext {
  db: OrdersDb;
  lookupStrategy: StrategyLookup;
  /** Per request: every order the response needs is read in one query. */
  orderById: { load(id: string): Promise<OrderRow | null> };
  /** Per request: the orders of every strategy in the response, one query per distinct arguments. */
  strategyOrders(strategyId: string, args: ListArguments): Promise<Connection<OrderRow>>;
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

function viewOrNull(row: OrderRow | null | undefined) {
  return row ? orderView(row) : null;
}

function connectionView(connection: Connection<OrderRow>) {
  const edges = connection.edges.map((edge) => ({ cursor: edge.cursor, node: orderView(edge.node) }));
  return { nodes: edges.map((edge) => edge.node), edges, pageInfo: connection.pageInfo };
}

function orderPayload(result: Result<OrderRow>): { orderSubmission: ReturnType<typeof orderView> | null; error: PayloadError | null } {
  return result.ok ? { orderSubmission: orderView(result.value), error: null } : { orderSubmission: null, error: result.error };
}

/** Ids are UUIDs; anything else names no order, and Postgres never sees it. */
function loadOrder(context: OrdersContext, id: string) {
  return isUuid(id) ? context.orderById.load(id.toLowerCase()).then(viewOrNull) : null;
}

/** The parent of OrderSubmission's own resolvers. */
export type OrderView = ReturnType<typeof orderView>;

export const resolvers: Resolvers = {
  Decimal: DecimalScalar,
  DateTime: DateTimeScalar,
  Query: {
    listOrderSubmissions: async (_, args, context) =>
      connectionView(await listOrderSubmissions({ db: context.db, accountId: context.caller.accountId }, args)),
    orderSubmission: (_, { id }, context) => loadOrder(context, id),
  },
  Mutation: {
    submitOrder: async (_, { input }, context) =>
      orderPayload(
        await submitOrder({ db: context.db, accountId: context.caller.accountId, lookupStrategy: context.lookupStrategy }, input),
      ),
    cancelOrderSubmission: async (_, { id }, context) =>
      orderPayload(await cancelOrderSubmission({ db: context.db, accountId: context.caller.accountId }, id)),
    replaceOrderSubmission: async (_, { id, input }, context) => {
      const result = await replaceOrderSubmission({ db: context.db, accountId: context.caller.accountId }, id, input);
      return result.ok
        ? { orderSubmission: orderView(result.value.order), replacedOrderSubmission: orderView(result.value.replaced), error: null }
        : { orderSubmission: null, replacedOrderSubmission: null, error: result.error };
    },
    cancelOrderSubmissions: async (_, { filter }, context) => {
      const result = await cancelOrderSubmissions({ db: context.db, accountId: context.caller.accountId }, filter);
      return { cancelledCount: result.cancelled.length, orderSubmissions: result.cancelled.map(orderView), hasMore: result.hasMore, error: null };
    },
    applyFill: async (_, { input }, context) => {
      const refused = checkFill(input);
      if (refused) throw badUserInput(refused, 'input');
      const result = await applyFill({ db: context.db, accountId: context.caller.accountId }, input);
      return { outcome: result.outcome, orderSubmission: viewOrNull(result.order) };
    },
  },
  OrderSubmission: {
    __resolveReference: (reference, context) => loadOrder(context, reference.id),
    replacedBy: (order, _, context) => (order.replacedBy === null ? null : loadOrder(context, order.replacedBy)),
    replacesOrderSubmission: (order, _, context) =>
      order.replacesOrderSubmission === null ? null : loadOrder(context, order.replacesOrderSubmission),
  },
  Strategy: {
    __resolveReference: (reference) => ({ id: reference.id }),
    orderSubmissions: async ({ id }, args, context) =>
      connectionView(await context.strategyOrders(id, args)),
  },
};
