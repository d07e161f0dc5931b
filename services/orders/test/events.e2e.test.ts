import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import type { FillsDatabase } from '@ots/fills/repository';
import { waitForEvents, type EventResult } from '../../../testing/events.ts';
import type { OrdersDatabase } from '../src/repository.ts';
import { cancel, data, ERROR_FIELDS, ORDER_FIELDS, STACK_ENV, submit, submitted, type Client } from './e2e.ts';

/** The order and fill events (contract section 6), written in the transaction of each change and relayed to the feed. */

let stack: TestStack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({ redis: 'none', env: { ...STACK_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' } });
  client = await stack.createAccountWithKey('Events');
});
afterAll(async () => {
  await stack?.close();
});

const FULL_ORDER_FIELDS = `${ORDER_FIELDS} replacedAt replacedBy { id } replacesOrderSubmission { id }`;

/** The order as `orderSubmission(id)` shows it, in the events' form: references as ids. */
async function orderAsEventData(id: string) {
  const result = await data(stack, client, `query ($id: ID!) { orderSubmission(id: $id) { ${FULL_ORDER_FIELDS} } }`, { id });
  const { strategy, replacedBy, replacesOrderSubmission, ...fields } = result.orderSubmission;
  return {
    ...fields,
    strategyId: strategy?.id ?? null,
    replacedByOrderSubmissionId: replacedBy?.id ?? null,
    replacesOrderSubmissionId: replacesOrderSubmission?.id ?? null,
  };
}

async function recordFill(orderSubmissionId: string, executionId: string, quantity: string, price: string) {
  const result = await data(
    stack,
    client,
    `mutation ($input: RecordFillInput!) { recordFill(input: $input) { fill { id orderSubmission { id } executionId symbol side quantity price fee liquidity executedAt recordedAt } ${ERROR_FIELDS} } }`,
    { input: { orderSubmissionId, executionId, quantity, price } },
  );
  expect(result.recordFill.error).toBeNull();
  return result.recordFill.fill;
}

const byType = (events: EventResult[], type: string) => events.filter((event) => event.type === type);

describe('order and fill events', () => {
  it('report every change once, as the API shows the order and the fill, and nothing for a retry or a refusal', async () => {
    const limit = await submitted(stack, client, { clientOrderId: 'ev-1', type: 'LIMIT', quantity: '10', limitPrice: '100.50' });
    // A retry of the same submission, and a refused one, record nothing.
    expect((await submit(stack, client, { clientOrderId: 'ev-1', symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: '10', limitPrice: '100.50' })).error).toBeNull();
    expect((await submit(stack, client, { symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '0' })).error?.code).toBe('VALIDATION_FAILED');

    const partial = await recordFill(limit.id, 'ev-exec-1', '4', '100');
    await recordFill(limit.id, 'ev-exec-1', '4', '100'); // the same execution again: nothing new
    const afterPartial = await orderAsEventData(limit.id);
    const rest = await recordFill(limit.id, 'ev-exec-2', '6', '101');
    const filled = await orderAsEventData(limit.id);
    expect((await cancel(stack, client, limit.id)).error?.code).toBe('ORDER_NOT_CANCELLABLE');

    const toCancel = await submitted(stack, client, { symbol: 'MSFT' });
    expect((await cancel(stack, client, toCancel.id)).error).toBeNull();
    expect((await cancel(stack, client, toCancel.id)).error).toBeNull(); // already cancelled: unchanged, no event
    const cancelled = await orderAsEventData(toCancel.id);

    const toReplace = await submitted(stack, client, { symbol: 'TSLA', type: 'LIMIT', quantity: '5', limitPrice: '200' });
    const replaced = await data(
      stack,
      client,
      `mutation ($id: ID!) { replaceOrderSubmission(id: $id, input: { quantity: "7" }) { orderSubmission { id } ${ERROR_FIELDS} } }`,
      { id: toReplace.id },
    );
    expect(replaced.replaceOrderSubmission.error).toBeNull();
    const replacement = replaced.replaceOrderSubmission.orderSubmission.id as string;

    const open = await submitted(stack, client, { symbol: 'NVDA' });
    const all = await data(stack, client, `mutation { cancelOrderSubmissions(filter: {}) { cancelledCount hasMore ${ERROR_FIELDS} } }`);
    expect(all.cancelOrderSubmissions).toMatchObject({ cancelledCount: 2, hasMore: false, error: null });

    const events = await waitForEvents(stack, client, 13);
    // Give a stray duplicate the time to arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const settled = await waitForEvents(stack, client, 13);
    expect(settled.map((event) => event.type)).toEqual([
      'order_submission.submitted',
      'order_submission.partially_filled',
      'fill.recorded',
      'order_submission.filled',
      'fill.recorded',
      'order_submission.submitted',
      'order_submission.cancelled',
      'order_submission.submitted',
      'order_submission.replaced',
      'order_submission.submitted',
      'order_submission.submitted',
      'order_submission.cancelled',
      'order_submission.cancelled',
    ]);
    expect(events[0]!.data).toMatchObject({ id: limit.id, status: 'SUBMITTED', quantity: '10', limitPrice: '100.5', filledQuantity: '0', averageFillPrice: null });
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
    expect(settled[9]!.data).toMatchObject({ id: replacement, quantity: '7', replacesOrderSubmissionId: toReplace.id });
    expect(settled.slice(11).map((event) => event.data.id).sort()).toEqual([replacement, open.id].sort());

    // Relayed rows leave both outboxes.
    const orders = createDatabase<OrdersDatabase>({ url: stack.databaseUrl, schema: 'orders', applicationName: 'orders-test' });
    const fills = createDatabase<FillsDatabase>({ url: stack.databaseUrl, schema: 'fills', applicationName: 'fills-test' });
    try {
      expect(await orders.selectFrom('outbox').select('id').execute()).toEqual([]);
      expect(await fills.selectFrom('outbox').select('id').execute()).toEqual([]);
    } finally {
      await orders.destroy();
      await fills.destroy();
    }
  });
});
