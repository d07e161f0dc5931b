import { Decimal, formatDecimal } from '@ots/shared/decimal';
import { newId, type Uuid } from '@ots/shared/ids';
import type { EventType, RecordedFillFields } from '@ots/shared/contracts/events';
import { averageFillPrice, remainingQuantity, type FillState, type OrderDraft } from './domain.ts';
import type { NewOrder, OrderEvent, OrderRow, RecordedFillRow } from './repository.ts';

/**
 * The one mapping of an order: row to domain (`draftOf`, `fillStateOf`), domain to row (`newOrderRow`),
 * row to the wire (`orderData`, an event's data) and the wire to the schema's object (`orderView`,
 * the parent codegen.ts's `mappers` names). A field of the order is added here once, beside the SDL.
 * Kept apart from resolvers.ts, which imports the generated types that import `OrderView`.
 */

function decimalOrNull(value: string | null): Decimal | null {
  return value === null ? null : new Decimal(value);
}

const wireOrNull = (value: Decimal | null): string | null => (value === null ? null : formatDecimal(value));

/** What a submission of the order was: what a retry is compared with, and a replacement inherits. */
export function draftOf(row: OrderRow): OrderDraft {
  return {
    clientOrderId: row.client_order_id,
    strategyId: row.strategy_id,
    symbol: row.symbol,
    side: row.side,
    type: row.type,
    timeInForce: row.time_in_force,
    quantity: new Decimal(row.quantity),
    limitPrice: decimalOrNull(row.limit_price),
    stopPrice: decimalOrNull(row.stop_price),
  };
}

export function fillStateOf(row: Pick<OrderRow, 'status' | 'quantity' | 'filled_quantity' | 'fill_notional'> & Partial<Pick<OrderRow, 'cancelled_at' | 'replaced_at'>>): FillState {
  return {
    status: row.status,
    quantity: new Decimal(row.quantity),
    filledQuantity: new Decimal(row.filled_quantity),
    fillNotional: new Decimal(row.fill_notional),
    cancelledAt: row.cancelled_at ?? null,
    replacedAt: row.replaced_at ?? null,
  };
}

/** A new order's row, but for its times, which the insert stamps. */
export function newOrderRow(accountId: string, draft: OrderDraft, replacesId: Uuid | null = null): NewOrder {
  return {
    id: newId(),
    account_id: accountId,
    client_order_id: draft.clientOrderId,
    strategy_id: draft.strategyId,
    symbol: draft.symbol,
    side: draft.side,
    type: draft.type,
    time_in_force: draft.timeInForce,
    quantity: formatDecimal(draft.quantity),
    limit_price: wireOrNull(draft.limitPrice),
    stop_price: wireOrNull(draft.stopPrice),
    status: 'SUBMITTED',
    filled_quantity: '0',
    fill_notional: '0',
    replaced_by: null,
    replaces_id: replacesId,
  };
}

/**
 * The order on the wire but for its times (contract section 6): the data of its events, the same
 * field names as the API, decimals as canonical strings, references as ids. The statement that
 * writes the order adds its times, which only it knows; `orderView` adds them from the row.
 */
function orderData(order: NewOrder) {
  const fillState = fillStateOf(order);
  return {
    id: order.id,
    clientOrderId: order.client_order_id,
    strategyId: order.strategy_id,
    symbol: order.symbol,
    side: order.side,
    type: order.type,
    timeInForce: order.time_in_force,
    quantity: formatDecimal(fillState.quantity),
    limitPrice: wireOrNull(decimalOrNull(order.limit_price)),
    stopPrice: wireOrNull(decimalOrNull(order.stop_price)),
    status: order.status,
    filledQuantity: formatDecimal(fillState.filledQuantity),
    remainingQuantity: formatDecimal(remainingQuantity(fillState)),
    averageFillPrice: wireOrNull(averageFillPrice(fillState)),
    replacesOrderSubmissionId: order.replaces_id,
    replacedByOrderSubmissionId: order.replaced_by,
  };
}

/** The event of a write of `order` (the row as the write leaves it, but for its times). */
export function orderEvent(type: EventType, order: NewOrder): OrderEvent {
  return { id: newId(), type, data: orderData(order) };
}

/** The OrderSubmission object as the schema shows it: the wire form with its times, the strategy as a reference. */
export function orderView(row: OrderRow) {
  return {
    ...orderData(row),
    // A reference the strategies subgraph resolves; orders only knows the id it stored.
    strategy: row.strategy_id === null ? null : { __typename: 'Strategy' as const, id: row.strategy_id },
    submittedAt: row.submitted_at,
    updatedAt: row.updated_at,
    cancelledAt: row.cancelled_at,
    replacedAt: row.replaced_at,
  };
}

/** The parent of OrderSubmission's own resolvers: every row becomes a GraphQL object through `orderView`. */
export type OrderView = ReturnType<typeof orderView>;

/** A fill as orders records it, on the wire but for its times and its order (the `fill.recorded` event's data, which the statement completes). */
export function fillData(
  fillId: Uuid,
  order: Pick<OrderRow, 'id' | 'symbol' | 'side'>,
  fill: { executionId: string; quantity: Decimal; price: Decimal; fee: Decimal; liquidity: RecordedFillRow['liquidity'] },
): RecordedFillFields {
  return {
    id: fillId,
    orderSubmissionId: order.id,
    executionId: fill.executionId,
    symbol: order.symbol,
    side: order.side,
    quantity: formatDecimal(fill.quantity),
    price: formatDecimal(fill.price),
    fee: formatDecimal(fill.fee),
    liquidity: fill.liquidity,
  };
}

/** A fill as orders recorded it, for applyFill's answer to the fills subgraph. */
export function recordedFillView(fill: RecordedFillRow) {
  return {
    id: fill.fill_id,
    executionId: fill.execution_id,
    quantity: new Decimal(fill.quantity),
    price: new Decimal(fill.price),
    fee: new Decimal(fill.fee),
    liquidity: fill.liquidity,
    executedAt: fill.executed_at,
    recordedAt: fill.recorded_at,
  };
}
