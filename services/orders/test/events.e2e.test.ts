import { describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { asEventData, type EventResult } from '../../../testing/events.ts';
import type { OrdersDatabase } from '../src/repository.ts';

/** The order and fill events (contract section 6), written in the transaction of each change and relayed to the feed. */

const t = useStack({ redis: 'none', env: { ...NO_RATE_LIMIT_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' }, accounts: ['alice'] });

/** The order as `orderSubmission(id)` shows it, in the events' form: references as ids. */
async function orderAsEventData(id: string) {
  return asEventData((await t.alice.fullOrder(id))!);
}

async function recordFill(orderSubmissionId: string, executionId: string, quantity: string, price: string) {
  const payload = await t.alice.recordFill({ orderSubmissionId, executionId, quantity, price });
  expect(payload.error).toBeNull();
  return payload.fill!;
}

const byType = (events: EventResult[], type: string) => events.filter((event) => event.type === type);

describe('order and fill events', () => {
  it('report every change once, as the API shows the order and the fill, and nothing for a retry or a refusal', async () => {
    const limit = await t.alice.submittedOrder({ clientOrderId: 'ev-1', type: 'LIMIT', quantity: '10', limitPrice: '100.50' });
    // A retry of the same submission, and a refused one, record nothing.
    expect((await t.alice.submitOrder({ clientOrderId: 'ev-1', symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: '10', limitPrice: '100.50' })).error).toBeNull();
    expect((await t.alice.submitOrder({ symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '0' })).error?.code).toBe('VALIDATION_FAILED');

    const partial = await recordFill(limit.id, 'ev-exec-1', '4', '100');
    await recordFill(limit.id, 'ev-exec-1', '4', '100'); // the same execution again: nothing new
    const afterPartial = await orderAsEventData(limit.id);
    const rest = await recordFill(limit.id, 'ev-exec-2', '6', '101');
    const filled = await orderAsEventData(limit.id);
    expect((await t.alice.cancelOrder(limit.id)).error?.code).toBe('ORDER_NOT_CANCELLABLE');

    const toCancel = await t.alice.submittedOrder({ symbol: 'MSFT' });
    expect((await t.alice.cancelOrder(toCancel.id)).error).toBeNull();
    expect((await t.alice.cancelOrder(toCancel.id)).error).toBeNull(); // already cancelled: unchanged, no event
    const cancelled = await orderAsEventData(toCancel.id);

    const toReplace = await t.alice.submittedOrder({ symbol: 'TSLA', type: 'LIMIT', quantity: '5', limitPrice: '200' });
    const replaced = await t.alice.replaceOrder(toReplace.id, { quantity: '7' });
    expect(replaced.error).toBeNull();
    const replacement = replaced.orderSubmission!.id;

    const open = await t.alice.submittedOrder({ symbol: 'NVDA' });
    expect(await t.alice.cancelOrders({})).toMatchObject({ cancelledCount: 2, hasMore: false, error: null });

    // Orders writes the fills' events too.
    const settled = await t.alice.allEvents(['orders']);
    // Each producer's events arrive in the order it wrote them. An order's event and its fill's come
    // from two producers (orders, fills), each with its own relay, and may arrive in either order.
    const orderEvents = settled.filter((event) => event.type !== 'fill.recorded');
    expect(orderEvents.map((event) => event.type)).toEqual([
      'order_submission.submitted',
      'order_submission.partially_filled',
      'order_submission.filled',
      'order_submission.submitted',
      'order_submission.cancelled',
      'order_submission.submitted',
      'order_submission.replaced',
      'order_submission.submitted',
      'order_submission.submitted',
      'order_submission.cancelled',
      'order_submission.cancelled',
    ]);
    expect(byType(settled, 'fill.recorded').map((event) => event.data.executionId)).toEqual(['ev-exec-1', 'ev-exec-2']);
    expect(settled).toHaveLength(13);
    expect(settled[0]!.data).toMatchObject({ id: limit.id, status: 'SUBMITTED', quantity: '10', limitPrice: '100.5', filledQuantity: '0', averageFillPrice: null });
    expect(byType(settled, 'order_submission.partially_filled')[0]!.data).toEqual(afterPartial);
    expect(byType(settled, 'order_submission.filled')[0]!.data).toEqual(filled);
    expect(byType(settled, 'order_submission.filled')[0]!.occurredAt).toBe(filled.updatedAt);

    const [firstFill, secondFill] = byType(settled, 'fill.recorded');
    const { orderSubmission: partialOrderRef, ...partialFill } = partial;
    expect(firstFill!.data).toEqual({ ...partialFill, orderSubmissionId: partialOrderRef.id, orderSubmission: afterPartial });
    expect(secondFill!.data).toMatchObject({ id: rest.id, executionId: 'ev-exec-2', quantity: '6', price: '101', orderSubmission: filled });

    expect(byType(settled, 'order_submission.cancelled')[0]!.data).toEqual(cancelled);
    const replacedEvent = byType(settled, 'order_submission.replaced')[0]!;
    expect(replacedEvent.data).toEqual(await orderAsEventData(toReplace.id));
    expect(replacedEvent.data).toMatchObject({ status: 'REPLACED', replacedByOrderSubmissionId: replacement });
    expect(orderEvents[7]!.data).toMatchObject({ id: replacement, quantity: '7', replacesOrderSubmissionId: toReplace.id });
    expect(orderEvents.slice(9).map((event) => event.data.id).sort()).toEqual([replacement, open.id].sort());

    // Relayed rows leave the outbox (orders writes the fills' events too).
    const orders = createDatabase<OrdersDatabase>({ url: t.stack.databaseUrl, schema: 'orders', applicationName: 'orders-test' });
    try {
      expect(await orders.selectFrom('outbox').select('id').execute()).toEqual([]);
    } finally {
      await orders.destroy();
    }
  });
});
