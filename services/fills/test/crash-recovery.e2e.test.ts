import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyFillRoute } from '@ots/shared/fill-application';
import { HttpCallError } from '@ots/shared/http-client';
import { newId } from '@ots/shared/ids';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { eventually, interceptApplyFill, recorded, submitOrder } from './support.ts';

vi.mock('@ots/shared/http-client', { spy: true });

/**
 * recordFill crosses two databases: the fill is stored PENDING in fills, applied in orders, then marked
 * APPLIED. These tests break the chain between the steps — orders dies, an answer is lost, fills dies —
 * and check that the recovery sweeper brings both sides to the same state, each fill counted once.
 */

/** Pending fills are left to their request for this long; the sweeper looks every 100 ms. */
const MIN_AGE_MS = 2_000;

const t = useStack({ env: { ...NO_RATE_LIMIT_ENV, FILL_SWEEP_INTERVAL_MS: '100', FILL_SWEEP_MIN_AGE_MS: String(MIN_AGE_MS) }, accounts: ['alice'] });
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

describe('recovery of fills interrupted between the two databases', () => {
  it('orders dies after the fill is stored: the fill stays invisible, then recovery applies it exactly once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '2', price: '30' };
    applyFill.once(async (forward) => {
      await t.stack.stopService('orders');
      return forward();
    });

    const interrupted = await t.alice.recordFill(input);
    expect(interrupted).toMatchObject({ fill: null, orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
    expect(await storedFills(input.executionId)).toEqual([{ id: expect.any(String), status: 'PENDING' }]);
    expect((await t.alice.listFills({ filter: { orderSubmissionId: order.id } })).nodes).toEqual([]);
    // A retry while orders is still down is refused the same way and changes nothing.
    expect((await t.alice.recordFill(input)).error?.code).toBe('TEMPORARILY_UNAVAILABLE');

    await t.stack.startService('orders');
    await eventually(async () => {
      const state = await t.alice.orderWithFills(order.id);
      expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '2', remainingQuantity: '3', averageFillPrice: '30' });
      expect(state?.fills.map((fill) => fill.executionId)).toEqual([input.executionId]);
    });
    expect(await storedFills(input.executionId)).toEqual([{ id: expect.any(String), status: 'APPLIED' }]);

    const retry = await recorded(t.alice, input);
    expect(retry.orderSubmission).toMatchObject({ filledQuantity: '2' });
    expect(retry.fill.id).toBe((await storedFills(input.executionId))[0]?.id);
  });

  it('orders applies the fill but its answer is lost: the order counts it at once, the fill shows after recovery, once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '1.5', price: '12' };
    applyFill.once(async (forward) => {
      await forward();
      throw new HttpCallError('other side closed', false);
    });

    const interrupted = await t.alice.recordFill(input);
    expect(interrupted.error?.code).toBe('TEMPORARILY_UNAVAILABLE');
    // Within the minimum age the two sides disagree: orders counts a fill that fills does not show yet.
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ filledQuantity: '1.5', fills: [] });

    await eventually(async () => {
      const state = await t.alice.orderWithFills(order.id);
      expect(state?.fills.map((fill) => fill.quantity)).toEqual(['1.5']);
    });
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '1.5', remainingQuantity: '3.5' });
  });

  it('fills dies after orders applied the fill: after restart, recovery marks it applied without applying it again', async () => {
    const order = await submitOrder(t.alice, { quantity: '4', side: 'SELL', symbol: 'GLOBEX' });
    const fillId = newId();
    const executionId = `exec-${randomUUID()}`;
    await t.stack.stopService('fills');
    try {
      // What a fills process leaves behind when it dies right after orders answered: a pending row,
      // and an order that already counts the fill.
      await database.query(
        `insert into fills.fills (id, account_id, api_key_id, order_submission_id, strategy_id, symbol, side, execution_id,
           quantity, price, fee, liquidity, executed_at, status)
         values ($1, $2, $3, $4, null, 'GLOBEX', 'SELL', $5, '3', '99.5', '0.2', 'TAKER', now(), 'PENDING')`,
        [fillId, t.alice.accountId, t.alice.apiKeyId, order.id, executionId],
      );
      const applied = await t.alice.postToSubgraph(new URL(applyFillRoute.path, t.stack.urls.orders).href, {
        fillId,
        orderSubmissionId: order.id,
        quantity: '3',
        price: '99.5',
        executedAt: new Date().toISOString(),
      });
      expect(applied.body).toMatchObject({ outcome: 'APPLIED', orderSubmission: { filledQuantity: '3' } });
    } finally {
      await t.stack.startService('fills');
    }

    await eventually(async () => {
      expect(await storedFills(executionId)).toEqual([{ id: fillId, status: 'APPLIED' }]);
    });
    const state = await t.alice.orderWithFills(order.id);
    expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '3', remainingQuantity: '1' });
    expect(state?.fills).toEqual([expect.objectContaining({ id: fillId, executionId, quantity: '3', price: '99.5', fee: '0.2' })]);

    const retry = await recorded(t.alice, { orderSubmissionId: order.id, executionId, quantity: '3', price: '99.5', fee: '0.2', liquidity: 'TAKER' });
    expect(retry.fill.id).toBe(fillId);
    expect(retry.orderSubmission.filledQuantity).toBe('3');
  });

  it('recovery drops a pending fill that orders refuses, so it blocks nothing', async () => {
    const order = await submitOrder(t.alice, { quantity: '1' });
    await recorded(t.alice, { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '1', price: '5' });
    const executionId = `exec-${randomUUID()}`;
    // Left behind by a request that died before orders saw it; the order has been filled since.
    await database.query(
      `insert into fills.fills (id, account_id, api_key_id, order_submission_id, strategy_id, symbol, side, execution_id,
         quantity, price, fee, liquidity, executed_at, status)
       values ($1, $2, $3, $4, null, 'ACME', 'BUY', $5, '1', '5', '0', 'UNKNOWN', now(), 'PENDING')`,
      [newId(), t.alice.accountId, t.alice.apiKeyId, order.id, executionId],
    );

    await eventually(async () => {
      expect(await storedFills(executionId)).toEqual([]);
    });
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'FILLED', filledQuantity: '1' });
    expect((await t.alice.recordFill({ orderSubmissionId: order.id, executionId, quantity: '1', price: '5' })).error?.code).toBe(
      'ORDER_NOT_FILLABLE',
    );
  });

  it('orders down when the fill arrives: the fill is stored pending and invisible, and a retry after it returns records it once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '5', price: '1' };
    await t.stack.stopService('orders');
    try {
      expect((await t.alice.recordFill(input)).error?.code).toBe('TEMPORARILY_UNAVAILABLE');
      expect(await storedFills(input.executionId)).toEqual([expect.objectContaining({ status: 'PENDING' })]);
    } finally {
      await t.stack.startService('orders');
    }
    const payload = await recorded(t.alice, input);
    expect(payload.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '5' });
    expect((await t.alice.orderWithFills(order.id))?.fills).toHaveLength(1);
  });
});
