import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { createStrategy, eventually, recorded, submitOrder } from './support/fixtures.ts';

/**
 * Late fills through the gateway: a venue's "too late to cancel". Whether a fill on a cancelled or
 * replaced order counts is orders' decision (its transition table); fills only asks, and keeps what
 * orders recorded, by request or by the recovery path, the same way as any other.
 */

const t = useStack({ env: { ...NO_RATE_LIMIT_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' }, accounts: ['alice'] });
let database: pg.Client;

beforeAll(async () => {
  database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
});

async function cancelledAt(orderId: string): Promise<string> {
  const payload = await t.alice.cancelOrder(orderId);
  expect(payload.error).toBeNull();
  return payload.orderSubmission!.cancelledAt!;
}

const shift = (iso: string, ms: number) => new Date(new Date(iso).getTime() + ms).toISOString();

async function positions(strategyId: string) {
  const result = await t.alice.data('query ($id: ID!) { strategy(id: $id) { positions { symbol netQuantity averageCost } } }', { id: strategyId });
  return result.strategy.positions;
}

describe('late fills', () => {
  it('records a fill executed at or before the cancel on the CANCELLED order, counts it in the position, and refuses one executed 1 ms after', async () => {
    const strategyId = await createStrategy(t.alice, `late-${randomUUID()}`);
    const order = await submitOrder(t.alice, { strategyId, quantity: '10' });
    await recorded(t.alice, { orderSubmissionId: order.id, executionId: `x-${randomUUID()}`, quantity: '2', price: '10' });
    const at = await cancelledAt(order.id);

    const late = await recorded(t.alice, {
      orderSubmissionId: order.id,
      executionId: `x-${randomUUID()}`,
      quantity: '3',
      price: '20',
      executedAt: at,
    });
    expect(late.orderSubmission).toMatchObject({ status: 'CANCELLED', filledQuantity: '5', remainingQuantity: '0', averageFillPrice: '16' });
    expect(await positions(strategyId)).toEqual([{ symbol: 'ACME', netQuantity: '5', averageCost: '16' }]);

    const tooLate = await t.alice.recordFill({
      orderSubmissionId: order.id,
      executionId: `x-${randomUUID()}`,
      quantity: '1',
      price: '20',
      executedAt: shift(at, 1),
    });
    expect(tooLate).toMatchObject({ fill: null, error: { code: 'ORDER_NOT_FILLABLE', field: 'orderSubmissionId' } });
    expect((await t.alice.orderWithFills(order.id))?.fills).toHaveLength(2);
  });

  it('is idempotent by executionId like every fill', async () => {
    const order = await submitOrder(t.alice, { quantity: '10' });
    const at = await cancelledAt(order.id);
    const input = { orderSubmissionId: order.id, executionId: `x-${randomUUID()}`, quantity: '4', price: '5', executedAt: shift(at, -1) };
    const first = await recorded(t.alice, input);
    const retry = await recorded(t.alice, input);
    expect(retry.fill.id).toBe(first.fill.id);
    expect(retry.orderSubmission).toMatchObject({ status: 'CANCELLED', filledQuantity: '4' });
    expect((await t.alice.recordFill({ ...input, quantity: '5' })).error?.code).toBe('DUPLICATE_EXECUTION_ID');
  });

  it('turns a cancelled order that a late fill completes FILLED with cancelledAt null; then any fill is ORDER_NOT_FILLABLE', async () => {
    const order = await submitOrder(t.alice, { quantity: '10' });
    const at = await cancelledAt(order.id);
    await recorded(t.alice, { orderSubmissionId: order.id, executionId: `x-${randomUUID()}`, quantity: '10', price: '5', executedAt: at });
    const state = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { status cancelledAt filledQuantity } }', { id: order.id });
    expect(state.orderSubmission).toEqual({ status: 'FILLED', cancelledAt: null, filledQuantity: '10' });
    const more = await t.alice.recordFill({ orderSubmissionId: order.id, executionId: `x-${randomUUID()}`, quantity: '1', price: '5', executedAt: shift(at, -5) });
    expect(more.error?.code).toBe('ORDER_NOT_FILLABLE');
  });

  it('records a late fill on a REPLACED order, which stays REPLACED', async () => {
    const order = await submitOrder(t.alice, { quantity: '10' });
    const replaced = await t.alice.replaceOrder(order.id, { quantity: '6' });
    const at = replaced.replacedOrderSubmission!.replacedAt!;
    const late = await recorded(t.alice, { orderSubmissionId: order.id, executionId: `x-${randomUUID()}`, quantity: '10', price: '5', executedAt: at });
    expect(late.orderSubmission).toMatchObject({ status: 'REPLACED', filledQuantity: '10', remainingQuantity: '0' });
    const after = await t.alice.recordFill({ orderSubmissionId: order.id, executionId: `x-${randomUUID()}`, quantity: '1', price: '5', executedAt: shift(at, 1) });
    expect(after.error?.code).toBe('ORDER_NOT_FILLABLE');
  });

  it('the recovery path keeps a late fill like any other: applied once, with the order’s details', async () => {
    const order = await submitOrder(t.alice, { quantity: '10' });
    const at = await cancelledAt(order.id);
    const executionId = `x-${randomUUID()}`;
    // Recorded by orders for a request whose fills process died before keeping it.
    await t.stack.stopService('fills');
    try {
      const applied = await t.alice.callSubgraph(
        t.stack.urls.orders,
        'mutation ($input: ApplyFillInput!) { applyFill(input: $input) { outcome } }',
        { input: { executionId, orderSubmissionId: order.id, quantity: '3', price: '7', fee: '0', liquidity: 'UNKNOWN', executedAt: at } },
      );
      expect(applied.body.data.applyFill.outcome).toBe('APPLIED');
    } finally {
      await t.stack.startService('fills');
    }
    await eventually(async () => {
      const rows = (await database.query('select status, symbol, side from fills.fills where execution_id = $1', [executionId])).rows;
      expect(rows).toEqual([{ status: 'APPLIED', symbol: 'ACME', side: 'BUY' }]);
    });
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'CANCELLED', filledQuantity: '3' });
  });
});
