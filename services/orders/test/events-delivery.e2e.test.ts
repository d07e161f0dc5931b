import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { createWebhookEndpoint, waitForEvents, type EventResult } from '../../../testing/events.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';
import type { OrdersDatabase } from '../src/repository.ts';
import { cancel, data, STACK_ENV, submitted, type Client } from './e2e.ts';

interface RecordedFill {
  fill: { orderSubmission: { id: string }; [field: string]: unknown } | null;
  error: { code: string } | null;
}

/** recordFill through the gateway, with the fill as the API shows it (its event must show the same). */
async function recordFill(stack: TestStack, client: Client, input: Record<string, unknown>): Promise<RecordedFill> {
  const result = await data(
    stack,
    client,
    `mutation ($input: RecordFillInput!) {
      recordFill(input: $input) {
        fill { id executionId symbol side quantity price fee liquidity executedAt recordedAt orderSubmission { id } }
        error { code }
      }
    }`,
    { input },
  );
  return result.recordFill;
}

/**
 * The order_submission.* and fill.recorded events beyond events.e2e.test.ts: late fills, an event
 * that waits in the outbox across an outage of events and a restart of orders, and webhooks of
 * order events, signed, to the right account only.
 */

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ redis: 'none', env: { ...STACK_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' } });
});

afterAll(async () => {
  await stack?.close();
});

/** Every field of OrderSubmission, references as ids: what an order event's `data` holds. */
const FULL_ORDER_FIELDS = `id clientOrderId strategy { id } symbol side type timeInForce quantity limitPrice stopPrice status
  filledQuantity remainingQuantity averageFillPrice submittedAt updatedAt cancelledAt replacedAt replacedBy { id } replacesOrderSubmission { id }`;

interface ApiOrder {
  strategy: { id: string } | null;
  replacedBy: { id: string } | null;
  replacesOrderSubmission: { id: string } | null;
  updatedAt: string;
  [field: string]: unknown;
}

/** The order as an event shows it: the API's fields, references as ids. */
function asEventData({ strategy, replacedBy, replacesOrderSubmission, ...fields }: ApiOrder) {
  return {
    ...fields,
    strategyId: strategy?.id ?? null,
    replacedByOrderSubmissionId: replacedBy?.id ?? null,
    replacesOrderSubmissionId: replacesOrderSubmission?.id ?? null,
  };
}

async function orderNow(client: Client, id: string): Promise<ApiOrder> {
  return (await data(stack, client, `query ($id: ID!) { orderSubmission(id: $id) { ${FULL_ORDER_FIELDS} } }`, { id })).orderSubmission;
}

/** Waits for `count` events, then a little longer to show that no more arrive. */
async function exactlyEvents(client: Client, count: number): Promise<EventResult[]> {
  await waitForEvents(stack, client, count);
  await new Promise((resolve) => setTimeout(resolve, 400));
  const events = await waitForEvents(stack, client, count);
  expect(events).toHaveLength(count);
  return events;
}

const FILL = { price: '100.5', fee: '0.01', liquidity: 'MAKER' };

describe('order and fill events (transactional outbox)', () => {
  it('reports late fills on a cancelled order: partially_filled with status CANCELLED, then filled when one completes it', async () => {
    const client = await stack.createAccountWithKey('Late fill events');
    const order = await submitted(stack, client, { quantity: '5' });
    expect((await cancel(stack, client, order.id)).error).toBeNull();
    // A cancel of a cancelled order, and a fill executed after the cancel, change nothing and write nothing.
    expect((await cancel(stack, client, order.id)).error).toBeNull();
    const cancelled = await orderNow(client, order.id);
    expect((await recordFill(stack, client, { orderSubmissionId: order.id, executionId: 'after-cancel', quantity: '1', ...FILL })).error?.code).toBe('ORDER_NOT_FILLABLE');
    const beforeCancel = new Date(Date.parse(order.submittedAt) + 1).toISOString();
    const partial = await recordFill(stack, client, { orderSubmissionId: order.id, executionId: 'late-1', quantity: '2', executedAt: beforeCancel, ...FILL });
    expect(partial.error).toBeNull();
    const partlyFilled = await orderNow(client, order.id);
    expect(partlyFilled.status).toBe('CANCELLED');
    expect((await recordFill(stack, client, { orderSubmissionId: order.id, executionId: 'late-2', quantity: '3', executedAt: beforeCancel, ...FILL })).error).toBeNull();
    const filled = await orderNow(client, order.id);
    expect(filled).toMatchObject({ status: 'FILLED', filledQuantity: '5', cancelledAt: null });

    const events = await exactlyEvents(client, 6);
    expect(events.map((event) => event.type)).toEqual([
      'order_submission.submitted',
      'order_submission.cancelled',
      'order_submission.partially_filled',
      'fill.recorded',
      'order_submission.filled',
      'fill.recorded',
    ]);
    const expected = (order: ApiOrder) => ({ occurredAt: order.updatedAt, data: asEventData(order) });
    expect(events[1]).toMatchObject(expected(cancelled));
    expect(events[2]).toMatchObject(expected(partlyFilled));
    expect(events[4]).toMatchObject(expected(filled));
    const { orderSubmission, ...fill } = partial.fill!;
    expect(events[3]!.data).toEqual({ ...fill, orderSubmissionId: orderSubmission.id, orderSubmission: asEventData(partlyFilled) });
    expect(events[5]!.data.orderSubmission).toEqual(asEventData(filled));
  });

  it('keeps an order event committed while events is down, across a restart of orders, and relays it once', async () => {
    const client = await stack.createAccountWithKey('Order events outage');
    await stack.stopService('events');
    const order = await submitted(stack, client, { clientOrderId: 'during-outage' });
    const outbox = createDatabase<OrdersDatabase>({ url: stack.databaseUrl, schema: 'orders', applicationName: 'orders-events-test' });
    try {
      // Committed with the order, waiting for the relay; then orders goes down before sending it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const waiting = await outbox.selectFrom('outbox').select(['type', 'data']).where('account_id', '=', client.accountId).execute();
      expect(waiting).toEqual([{ type: 'order_submission.submitted', data: expect.objectContaining({ id: order.id }) }]);
      await stack.stopService('orders');
      await stack.startService('events');
      await stack.startService('orders');

      const events = await exactlyEvents(client, 1);
      expect(events[0]).toMatchObject({ type: 'order_submission.submitted', data: { id: order.id, clientOrderId: 'during-outage' } });
      expect(await outbox.selectFrom('outbox').select('id').where('account_id', '=', client.accountId).execute()).toEqual([]);
    } finally {
      await outbox.destroy();
    }
  });

  it("sends order and fill events to the account's webhook endpoint, signed to Standard Webhooks", async () => {
    const client = await stack.createAccountWithKey('Order webhooks');
    const other = await stack.createAccountWithKey('Other account');
    const receiver = await new Receiver().start();
    try {
      const secret = await createWebhookEndpoint(stack, client, { url: receiver.url, eventTypes: ['order_submission.submitted', 'order_submission.filled', 'fill.recorded'] });
      receiver.secrets = [secret];
      await submitted(stack, other, { clientOrderId: 'not-mine' });
      const order = await submitted(stack, client, { quantity: '2' });
      expect((await cancel(stack, client, (await submitted(stack, client)).id)).error).toBeNull();
      expect((await recordFill(stack, client, { orderSubmissionId: order.id, executionId: 'w-1', quantity: '2', ...FILL })).error).toBeNull();

      const received = await receiver.waitFor(4);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(receiver.received).toHaveLength(4);
      expect(received.every((hook) => hook.verified !== undefined)).toBe(true);
      const bodies = received.map((hook) => JSON.parse(hook.body) as EventResult);
      expect(bodies.map((body) => body.type).sort()).toEqual(['fill.recorded', 'order_submission.filled', 'order_submission.submitted', 'order_submission.submitted']);
      expect(bodies.every((body) => body.data.clientOrderId !== 'not-mine')).toBe(true);
      const filled = bodies.find((body) => body.type === 'order_submission.filled')!;
      expect(filled.data).toMatchObject({ id: order.id, status: 'FILLED', filledQuantity: '2', remainingQuantity: '0', averageFillPrice: '100.5' });
      expect(received.map((hook) => hook.headers['webhook-id']).sort()).toEqual(bodies.map((body) => body.id).sort());
    } finally {
      await receiver.close();
    }
  });
});
