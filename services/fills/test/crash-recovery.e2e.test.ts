import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import type { ApiClient } from '../../../testing/client.ts';
import { answerLost, eventually, interceptApplyFill, recorded, submitOrder } from './support/fixtures.ts';

vi.mock('@ots/shared/http-client', { spy: true });

/**
 * recordFill is two commits: orders decides and records the fill (with the order's change and both
 * events), then fills keeps it. These tests break the route at each step — orders down before it
 * decides, orders' answer lost after its commit, fills down between the two commits — and check that
 * the fill is applied exactly once and ends up kept once, by a retry or, with none, by the recovery
 * path (orders' outbox relay brings the `fill.recorded` event to fills).
 */

const t = useStack({ env: { ...NO_RATE_LIMIT_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' }, accounts: ['alice'] });
let database: pg.Client;

let applyFill: Awaited<ReturnType<typeof interceptApplyFill>>;

beforeAll(async () => {
  database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();

  applyFill = await interceptApplyFill();
});

afterEach(() => {
  applyFill.clear();
});

afterAll(async () => {
  vi.restoreAllMocks();
  await database?.end();
});

async function storedFills(executionId: string): Promise<{ id: string; status: string }[]> {
  const result = await database.query('select id, status from fills.fills where execution_id = $1', [executionId]);
  return result.rows;
}

/** What fills asks orders to do, sent straight to orders as fills sends it (with the caller's assertion). */
async function applyInOrders(client: ApiClient, input: Record<string, unknown>) {
  const applied = await client.callSubgraph(
    t.stack.urls.orders,
    `mutation ($input: ApplyFillInput!) { applyFill(input: $input) { outcome fill { id } orderSubmission { filledQuantity } } }`,
    { input: { fee: '0', liquidity: 'UNKNOWN', ...input } },
  );
  expect(applied.body.errors).toBeUndefined();
  return applied.body.data.applyFill as { outcome: string; fill: { id: string } | null; orderSubmission: { filledQuantity: string } | null };
}

describe('recordFill interrupted between the two commits', () => {
  it('orders down before it decides: TEMPORARILY_UNAVAILABLE, nothing recorded anywhere, and a retry after it returns records the fill once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '5', price: '1' };
    await t.stack.stopService('orders');
    try {
      const refused = await t.alice.recordFill(input);
      expect(refused).toMatchObject({ fill: null, orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
      expect(await storedFills(input.executionId)).toEqual([]);
      // A retry while orders is still down is answered the same way and changes nothing.
      expect((await t.alice.recordFill(input)).error?.code).toBe('TEMPORARILY_UNAVAILABLE');
    } finally {
      await t.stack.startService('orders');
    }
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'SUBMITTED', filledQuantity: '0', fills: [] });
    const payload = await recorded(t.alice, input);
    expect(payload.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '5' });
    expect((await t.alice.orderWithFills(order.id))?.fills).toHaveLength(1);
  });

  it("orders records the fill but its answer is lost: the order counts it at once, fills keeps it from orders' outbox, once", async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '1.5', price: '12' };
    applyFill.once(answerLost);

    const interrupted = await t.alice.recordFill(input);
    expect(interrupted.error?.code).toBe('TEMPORARILY_UNAVAILABLE');
    expect((await t.alice.orderWithFills(order.id))?.filledQuantity).toBe('1.5');

    // No retry: the recovery path keeps the fill.
    await eventually(async () => {
      expect(await storedFills(input.executionId)).toEqual([{ id: expect.any(String), status: 'APPLIED' }]);
    });
    const state = await t.alice.orderWithFills(order.id);
    expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '1.5', remainingQuantity: '3.5', averageFillPrice: '12' });
    expect(state?.fills.map((fill) => fill.executionId)).toEqual([input.executionId]);

    // A retry returns the recorded fill, and applies nothing again.
    const retry = await recorded(t.alice, input);
    expect(retry.fill.id).toBe((await storedFills(input.executionId))[0]?.id);
    expect(retry.orderSubmission).toMatchObject({ filledQuantity: '1.5', remainingQuantity: '3.5' });
  });

  it('fills down after orders recorded the fill: once fills is back, the recovery path keeps it, without applying it again', async () => {
    const order = await submitOrder(t.alice, { quantity: '4', side: 'SELL', symbol: 'GLOBEX' });
    const executionId = `exec-${randomUUID()}`;
    let fillId: string;
    await t.stack.stopService('fills');
    try {
      // What a fills process leaves behind when it dies right after orders answered: an order that counts the fill, nothing in fills.
      const applied = await applyInOrders(t.alice, { executionId, orderSubmissionId: order.id, quantity: '3', price: '99.5', fee: '0.2', liquidity: 'TAKER' });
      expect(applied).toMatchObject({ outcome: 'APPLIED', orderSubmission: { filledQuantity: '3' } });
      fillId = applied.fill!.id;
      // Orders' relay cannot reach fills meanwhile; the event waits in its outbox.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await storedFills(executionId)).toEqual([]);
    } finally {
      await t.stack.startService('fills');
    }

    await eventually(async () => {
      expect(await storedFills(executionId)).toEqual([{ id: fillId, status: 'APPLIED' }]);
    });
    const state = await t.alice.orderWithFills(order.id);
    expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '3', remainingQuantity: '1' });
    expect(state?.fills).toEqual([expect.objectContaining({ id: fillId, executionId, quantity: '3', price: '99.5', fee: '0.2', liquidity: 'TAKER', side: 'SELL', symbol: 'GLOBEX' })]);

    const retry = await recorded(t.alice, { orderSubmissionId: order.id, executionId, quantity: '3', price: '99.5', fee: '0.2', liquidity: 'TAKER' });
    expect(retry.fill.id).toBe(fillId);
    expect(retry.orderSubmission.filledQuantity).toBe('3');
  });

  it("fills down: the order feed goes on without it (a cancel behind the fill reaches events), and once fills is back the fill is kept once", async () => {
    const filled = await submitOrder(t.alice, { quantity: '2' });
    const cancelled = await submitOrder(t.alice, { quantity: '2' });
    const executionId = `exec-${randomUUID()}`;
    const cancelEvents = async () =>
      (await t.alice.listEvents({ filter: { types: ['order_submission.cancelled'] }, first: 200 })).nodes.filter((event) => event.data.id === cancelled.id);
    let fillId: string;
    await t.stack.stopService('fills');
    try {
      const applied = await applyInOrders(t.alice, { executionId, orderSubmissionId: filled.id, quantity: '1', price: '3' });
      expect(applied.outcome).toBe('APPLIED');
      fillId = applied.fill!.id;
      expect((await t.alice.cancelOrder(cancelled.id)).error).toBeNull();
      // Written after the fill's events, the cancel's reaches events while fills is still down.
      await eventually(async () => {
        expect(await cancelEvents()).toHaveLength(1);
      });
      expect(await t.alice.event(fillId)).toMatchObject({ type: 'fill.recorded' });
      expect(await storedFills(executionId)).toEqual([]);
    } finally {
      await t.stack.startService('fills');
    }

    await eventually(async () => {
      expect(await storedFills(executionId)).toEqual([{ id: fillId, status: 'APPLIED' }]);
    });
    expect((await t.alice.orderWithFills(filled.id))?.fills).toEqual([expect.objectContaining({ id: fillId, executionId, quantity: '1' })]);
    expect(await cancelEvents()).toHaveLength(1);
  });

  it("a fill fills lost its copy of is kept again by a retry, still counted once", async () => {
    const order = await submitOrder(t.alice, { quantity: '2' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '1', price: '5' };
    const { fill } = await recorded(t.alice, input);
    // Once the recovery path has delivered the event (its relay leaves a row a second first; fills keeps
    // nothing twice), the copy is dropped, as a restore from an older backup would: nothing brings it back but the retry.
    await expect.poll(async () => (await database.query('select 1 from orders.fills_outbox where id = $1', [fill.id])).rowCount).toBe(0);
    await database.query('delete from fills.fills where id = $1', [fill.id]);
    expect(await t.alice.fill(fill.id)).toBeNull();

    const retry = await recorded(t.alice, input);
    expect(retry.fill.id).toBe(fill.id);
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '1', fills: [expect.objectContaining({ id: fill.id })] });
  });
});
