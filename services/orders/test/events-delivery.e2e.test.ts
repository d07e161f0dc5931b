import { describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { NO_RATE_LIMIT_ENV, useStack, type ApiClient } from '../../../testing/fixture.ts';
import { asEventData, type EventResult } from '../../../testing/events.ts';
import type { FullOrderFieldsFragment } from '../../../testing/client.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';
import type { OrdersDatabase } from '../src/repository.ts';

/**
 * The order_submission.* and fill.recorded events beyond events.e2e.test.ts: late fills, an event
 * that waits in the outbox across an outage of events and a restart of orders, and webhooks of
 * order events, signed, to the right account only.
 */

const t = useStack({ redis: 'none', env: { ...NO_RATE_LIMIT_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' }, accounts: [] });

/** The order as the API shows it now: every field, references as ids. */
async function orderNow(client: ApiClient, id: string): Promise<FullOrderFieldsFragment> {
  return (await client.fullOrder(id))!;
}

/** Every event of the account (orders writes the fills' too), once all have arrived: `count` of them. */
async function exactlyEvents(client: ApiClient, count: number): Promise<EventResult[]> {
  const events = await client.allEvents(['orders']);
  expect(events).toHaveLength(count);
  return events;
}

const FILL = { price: '100.5', fee: '0.01', liquidity: 'MAKER' } as const;

describe('order and fill events (transactional outbox)', () => {
  it('reports late fills on a cancelled order: partially_filled with status CANCELLED, then filled when one completes it', async () => {
    const client = await t.newAccount('Late fill events');
    const order = await client.submittedOrder({ quantity: '5' });
    expect((await client.cancelOrder(order.id)).error).toBeNull();
    // A cancel of a cancelled order, and a fill executed after the cancel, change nothing and write nothing.
    expect((await client.cancelOrder(order.id)).error).toBeNull();
    const cancelled = await orderNow(client, order.id);
    expect((await client.recordFill({ orderSubmissionId: order.id, executionId: 'after-cancel', quantity: '1', ...FILL })).error?.code).toBe('ORDER_NOT_FILLABLE');
    const beforeCancel = new Date(Date.parse(order.submittedAt) + 1).toISOString();
    const partial = await client.recordFill({ orderSubmissionId: order.id, executionId: 'late-1', quantity: '2', executedAt: beforeCancel, ...FILL });
    expect(partial.error).toBeNull();
    const partlyFilled = await orderNow(client, order.id);
    expect(partlyFilled.status).toBe('CANCELLED');
    expect((await client.recordFill({ orderSubmissionId: order.id, executionId: 'late-2', quantity: '3', executedAt: beforeCancel, ...FILL })).error).toBeNull();
    const filled = await orderNow(client, order.id);
    expect(filled).toMatchObject({ status: 'FILLED', filledQuantity: '5', cancelledAt: null });

    const events = await exactlyEvents(client, 6);
    // Orders' events in the order orders wrote them, fills' in fills' order; the two relays may interleave either way.
    const orderEvents = events.filter((event) => event.type !== 'fill.recorded');
    const fillEvents = events.filter((event) => event.type === 'fill.recorded');
    expect(orderEvents.map((event) => event.type)).toEqual([
      'order_submission.submitted',
      'order_submission.cancelled',
      'order_submission.partially_filled',
      'order_submission.filled',
    ]);
    expect(fillEvents.map((event) => event.data.executionId)).toEqual(['late-1', 'late-2']);
    const expected = (order: FullOrderFieldsFragment) => ({ occurredAt: order.updatedAt, data: asEventData(order) });
    expect(orderEvents[1]).toMatchObject(expected(cancelled));
    expect(orderEvents[2]).toMatchObject(expected(partlyFilled));
    expect(orderEvents[3]).toMatchObject(expected(filled));
    const { orderSubmission, ...fill } = partial.fill!;
    expect(fillEvents[0]!.data).toEqual({ ...fill, orderSubmissionId: orderSubmission.id, orderSubmission: asEventData(partlyFilled) });
    expect(fillEvents[1]!.data.orderSubmission).toEqual(asEventData(filled));
  });

  it('reports a late fill that completes a replaced order as partially_filled: the order stays REPLACED, its data shows the quantity filled', async () => {
    const client = await t.newAccount('Late fill after replace');
    const order = await client.submittedOrder({ quantity: '5' });
    expect((await client.replaceOrder(order.id, { quantity: '3' })).error).toBeNull();
    const beforeReplace = new Date(Date.parse(order.submittedAt) + 1).toISOString();
    expect((await client.recordFill({ orderSubmissionId: order.id, executionId: 'late-1', quantity: '2', executedAt: beforeReplace, ...FILL })).error).toBeNull();
    expect((await client.recordFill({ orderSubmissionId: order.id, executionId: 'late-2', quantity: '3', executedAt: beforeReplace, ...FILL })).error).toBeNull();
    expect(await orderNow(client, order.id)).toMatchObject({ status: 'REPLACED', filledQuantity: '5' });

    // submitted and replaced for the old order, submitted for the new one, then the two late fills.
    const events = await exactlyEvents(client, 7);
    const ofOld = events.filter((event) => event.type !== 'fill.recorded' && event.data.id === order.id);
    expect(ofOld.map((event) => [event.type, event.data.status, event.data.filledQuantity])).toEqual([
      ['order_submission.submitted', 'SUBMITTED', '0'],
      ['order_submission.replaced', 'REPLACED', '0'],
      ['order_submission.partially_filled', 'REPLACED', '2'],
      ['order_submission.partially_filled', 'REPLACED', '5'],
    ]);
  });

  it('keeps an order event committed while events is down, across a restart of orders, and relays it once', async () => {
    const client = await t.newAccount('Order events outage');
    await t.stack.stopService('events');
    const order = await client.submittedOrder({ clientOrderId: 'during-outage' });
    const outbox = createDatabase<OrdersDatabase>({ url: t.stack.databaseUrl, schema: 'orders', applicationName: 'orders-events-test' });
    try {
      // Committed with the order, waiting for the relay; then orders goes down before sending it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const waiting = await outbox.selectFrom('outbox').select(['type', 'data']).where('account_id', '=', client.accountId).execute();
      expect(waiting).toEqual([{ type: 'order_submission.submitted', data: expect.objectContaining({ id: order.id }) }]);
      await t.stack.stopService('orders');
      await t.stack.startService('events');
      await t.stack.startService('orders');

      const events = await exactlyEvents(client, 1);
      expect(events[0]).toMatchObject({ type: 'order_submission.submitted', data: { id: order.id, clientOrderId: 'during-outage' } });
      expect(await outbox.selectFrom('outbox').select('id').where('account_id', '=', client.accountId).execute()).toEqual([]);
    } finally {
      await outbox.destroy();
    }
  });

  it("sends order and fill events to the account's webhook endpoint, signed to Standard Webhooks", async () => {
    const client = await t.newAccount('Order webhooks');
    const other = await t.newAccount('Other account');
    const receiver = await new Receiver().start();
    try {
      const { secret } = await client.createdWebhookEndpoint({ url: receiver.url, eventTypes: ['order_submission.submitted', 'order_submission.filled', 'fill.recorded'] });
      receiver.secrets = [secret];
      await other.submittedOrder({ clientOrderId: 'not-mine' });
      const order = await client.submittedOrder({ quantity: '2' });
      expect((await client.cancelOrder((await client.submittedOrder()).id)).error).toBeNull();
      expect((await client.recordFill({ orderSubmissionId: order.id, executionId: 'w-1', quantity: '2', ...FILL })).error).toBeNull();

      // Every event stored, then every message to the endpoint delivered: nothing more will be sent.
      expect(await client.allEvents(['orders'])).toHaveLength(5);
      const messages = createDatabase<{ webhook_messages: { account_id: string; state: string; attempts: number } }>({
        url: t.stack.databaseUrl,
        schema: 'events',
        applicationName: 'order-webhooks-test',
      });
      try {
        const states = () => messages.selectFrom('webhook_messages').select(['state', 'attempts']).where('account_id', '=', client.accountId).execute();
        await expect.poll(states, { timeout: 15_000 }).toEqual(Array(4).fill({ state: 'DELIVERED', attempts: 1 }));
      } finally {
        await messages.destroy();
      }
      const received = receiver.received;
      expect(received).toHaveLength(4);
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
