import { describe, expect, it } from 'vitest';
import type { KyselyPlugin } from 'kysely';
import { setTimeout as sleep } from 'node:timers/promises';
import { Decimal } from '@ots/shared/decimal';
import { newId, parseUuid, receiveId } from '@ots/shared/ids';
import { testScope } from '@ots/shared/testing/scope';
import {
  applyFill,
  cancelOrderSubmission,
  cancelOrderSubmissions,
  replaceOrderSubmission,
  submitOrder,
  CANCEL_ALL_LIMIT,
  type FillRequest,
  type SubmitOrderRequest,
} from '../src/operations.ts';
import { findOrder, type OrderRow, type OrdersDatabase } from '../src/repository.ts';
import { useSchemaDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { someAccount } from './support/accounts.ts';

/**
 * Late fills, replace and cancel-all against a real Postgres: each rule once, then the races the
 * issue names (fill vs cancel, fill vs replace, cancel-all vs fills), where only the locks decide.
 */

const { db } = await useSchemaDatabase<OrdersDatabase>({ schema: SCHEMA, migrations }, { applicationName: 'orders-test', maxConnections: 30 });
const d = (value: string) => new Decimal(value);

function limitOrder(overrides: Partial<SubmitOrderRequest> = {}): SubmitOrderRequest {
  return { symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: d('10'), limitPrice: d('100'), ...overrides };
}

async function submitted(accountId: string, input: SubmitOrderRequest = limitOrder()): Promise<OrderRow> {
  const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: async () => 'ACTIVE' }, input);
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

const fill = (orderSubmissionId: string, quantity: string, executedAt: Date | null, price = '100'): FillRequest => ({
  executionId: newId(),
  orderSubmissionId: parseUuid(orderSubmissionId),
  quantity: d(quantity),
  price: d(price),
  fee: d('0'),
  liquidity: 'UNKNOWN',
  executedAt,
});

async function cancelled(accountId: string, id: string): Promise<OrderRow> {
  const result = await cancelOrderSubmission(testScope(db, accountId), receiveId(id));
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

describe('late fills', () => {
  it('applies a fill executed at or before the cancel, keeps the order CANCELLED, and refuses one executed after', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    await applyFill(testScope(db, accountId), fill(order.id, '2', new Date()));
    const cancel = await cancelled(accountId, order.id);
    const late = await applyFill(testScope(db, accountId), fill(order.id, '3', cancel.cancelled_at!, '101'));
    expect(late.outcome).toBe('APPLIED');
    expect(late.order).toMatchObject({ status: 'CANCELLED', filled_quantity: '5.0000000000', cancelled_at: cancel.cancelled_at });
    expect(d(late.order!.fill_notional).eq('503')).toBe(true);
    const tooLate = await applyFill(testScope(db, accountId), fill(order.id, '1', new Date(cancel.cancelled_at!.getTime() + 1)));
    expect(tooLate.outcome).toBe('NOT_FILLABLE');
    // A fill without an execution time is executed now: never late.
    expect((await applyFill(testScope(db, accountId), fill(order.id, '1', null))).outcome).toBe('NOT_FILLABLE');
  });

  it('turns a cancelled order that a late fill completes FILLED, with cancelledAt null', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    const cancel = await cancelled(accountId, order.id);
    const late = await applyFill(testScope(db, accountId), fill(order.id, '10', new Date(cancel.cancelled_at!.getTime() - 1)));
    expect(late.order).toMatchObject({ status: 'FILLED', cancelled_at: null });
    expect((await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id))).ok).toBe(false);
  });

  it('applies late fills to a REPLACED order within its quantity; it stays REPLACED', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    const replaced = await replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), { quantity: d('4') });
    if (!replaced.ok) throw new Error(replaced.error.message);
    const replacedAt = replaced.value.replaced.replaced_at!;
    expect((await applyFill(testScope(db, accountId), fill(order.id, '10.0000000001', replacedAt))).outcome).toBe('EXCEEDS_REMAINING');
    const late = await applyFill(testScope(db, accountId), fill(order.id, '10', replacedAt));
    expect(late.order).toMatchObject({ status: 'REPLACED', filled_quantity: '10.0000000000' });
    expect((await applyFill(testScope(db, accountId), fill(order.id, '1', replacedAt))).outcome).toBe('EXCEEDS_REMAINING');
  });
});

describe('replaceOrderSubmission', () => {
  it('creates the new order and marks the old one REPLACED in one transaction, linking both ways', async () => {
    const accountId = someAccount();
    const strategyId = newId();
    const order = await submitted(accountId, limitOrder({ strategyId: receiveId(strategyId), timeInForce: 'GTC' }));
    await applyFill(testScope(db, accountId), fill(order.id, '3', new Date()));
    const result = await replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), { quantity: d('7'), limitPrice: d('99.5'), clientOrderId: 'r-1' });
    if (!result.ok) throw new Error(result.error.message);
    const { order: next, replaced } = result.value;
    expect(next).toMatchObject({
      status: 'SUBMITTED',
      symbol: 'AAPL',
      side: 'BUY',
      type: 'LIMIT',
      strategy_id: strategyId,
      time_in_force: 'GTC',
      quantity: '7.0000000000',
      limit_price: '99.5000000000',
      client_order_id: 'r-1',
      replaces_id: order.id,
    });
    expect(replaced).toMatchObject({ status: 'REPLACED', replaced_by: next.id, filled_quantity: '3.0000000000' });
    expect(replaced.replaced_at).not.toBeNull();
    expect(await findOrder(db, accountId, order.id)).toEqual(replaced);
  });

  it('replaces the order when its replacement is submitted: one instant, after its last change, and its events in time order', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    // Its last change stamped by a replica whose clock runs 2 s ahead of this one.
    const ahead = new Date(Date.now() + 2000);
    await db.updateTable('order_submissions').set({ updated_at: ahead }).where('id', '=', order.id).execute();
    await db.deleteFrom('outbox').where('account_id', '=', accountId).execute();
    const result = await replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), { quantity: d('4') });
    if (!result.ok) throw new Error(result.error.message);
    const { order: next, replaced } = result.value;
    expect(replaced.replaced_at).toEqual(next.submitted_at);
    expect(replaced.updated_at).toEqual(next.submitted_at);
    expect(next.submitted_at.getTime()).toBe(ahead.getTime() + 1);
    const events = await db.selectFrom('outbox').select(['type', 'occurred_at']).where('account_id', '=', accountId).orderBy('id').execute();
    expect(events).toEqual([
      { type: 'order_submission.replaced', occurred_at: next.submitted_at },
      { type: 'order_submission.submitted', occurred_at: next.submitted_at },
    ]);
  });

  it('answers a retry with the same clientOrderId with the same replacement, and other details with DUPLICATE_CLIENT_ORDER_ID', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    const input = { quantity: d('5'), clientOrderId: 'r-2' };
    const results = await Promise.all(Array.from({ length: 8 }, () => replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), input)));
    expect(new Set(results.map((result) => (result.ok ? result.value.order.id : result.error.code))).size).toBe(1);
    expect(results.every((result) => result.ok)).toBe(true);
    const different = await replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), { quantity: d('6'), clientOrderId: 'r-2' });
    expect(different).toMatchObject({ ok: false, error: { code: 'DUPLICATE_CLIENT_ORDER_ID', field: 'clientOrderId' } });
    const orders = await db.selectFrom('order_submissions').select('id').where('account_id', '=', accountId).execute();
    expect(orders).toHaveLength(2);
  });

  it('refuses a closed order with ORDER_NOT_REPLACEABLE, an invalid input with VALIDATION_FAILED, and changes nothing', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    expect(await replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), { stopPrice: d('1') })).toMatchObject({
      ok: false,
      error: { code: 'VALIDATION_FAILED', field: 'stopPrice' },
    });
    await cancelled(accountId, order.id);
    expect(await replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), {})).toMatchObject({
      ok: false,
      error: { code: 'ORDER_NOT_REPLACEABLE', field: 'id' },
    });
    const orders = await db.selectFrom('order_submissions').select('id').where('account_id', '=', accountId).execute();
    expect(orders).toHaveLength(1);
  });

  it("answers another account's order, a missing id and a non-UUID alike with NOT_FOUND", async () => {
    const order = await submitted(someAccount());
    const stranger = testScope(db, someAccount());
    for (const id of [order.id, newId(), 'order-1']) {
      expect(await replaceOrderSubmission(stranger, receiveId(id), {})).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', field: 'id' } });
    }
    expect((await findOrder(db, order.account_id, order.id))?.status).toBe('SUBMITTED');
  });
});

describe('cancelOrderSubmissions', () => {
  it("cancels the caller's matching open orders oldest first, leaves the rest, and scopes to the account", async () => {
    const accountId = someAccount();
    const a = await submitted(accountId, limitOrder({ symbol: 'MSFT' }));
    const b = await submitted(accountId);
    const c = await submitted(accountId, limitOrder({ symbol: 'msft', side: 'SELL' }));
    const filled = await submitted(accountId, limitOrder({ symbol: 'MSFT' }));
    await applyFill(testScope(db, accountId), fill(filled.id, '10', new Date()));
    const theirs = await submitted(someAccount(), limitOrder({ symbol: 'MSFT' }));

    const bySymbol = await cancelOrderSubmissions(testScope(db, accountId), { symbol: 'msft' });
    expect(bySymbol.cancelled.map((row) => row.id)).toEqual([a.id, c.id]);
    expect(bySymbol.cancelled.every((row) => row.status === 'CANCELLED')).toBe(true);
    expect(bySymbol.hasMore).toBe(false);
    expect((await findOrder(db, accountId, b.id))?.status).toBe('SUBMITTED');
    expect((await findOrder(db, theirs.account_id, theirs.id))?.status).toBe('SUBMITTED');

    expect((await cancelOrderSubmissions(testScope(db, accountId), { strategyId: receiveId('not-a-uuid') })).cancelled).toEqual([]);
    expect((await cancelOrderSubmissions(testScope(db, accountId), {})).cancelled.map((row) => row.id)).toEqual([b.id]);
    expect((await cancelOrderSubmissions(testScope(db, accountId), null)).cancelled).toEqual([]);
  });

  it(`cancels at most ${CANCEL_ALL_LIMIT} per call and says when more remain`, async () => {
    const accountId = someAccount();
    await db
      .insertInto('order_submissions')
      .values(
        Array.from({ length: CANCEL_ALL_LIMIT + 2 }, (_, index) => ({
          id: newId(),
          account_id: accountId,
          client_order_id: null,
          strategy_id: null,
          symbol: 'BULK',
          side: 'BUY' as const,
          type: 'MARKET' as const,
          time_in_force: 'DAY' as const,
          quantity: '1',
          limit_price: null,
          stop_price: null,
          status: 'SUBMITTED' as const,
          filled_quantity: '0',
          fill_notional: '0',
          submitted_at: new Date(Date.UTC(2026, 0, 1, 0, 0, index)),
          updated_at: new Date(Date.UTC(2026, 0, 1, 0, 0, index)),
          cancelled_at: null,
          replaced_at: null,
          replaced_by: null,
          replaces_id: null,
        })),
      )
      .execute();
    const first = await cancelOrderSubmissions(testScope(db, accountId), {});
    expect(first.cancelled).toHaveLength(CANCEL_ALL_LIMIT);
    expect(first.hasMore).toBe(true);
    expect(first.cancelled[0]!.submitted_at).toEqual(new Date(Date.UTC(2026, 0, 1)));
    const second = await cancelOrderSubmissions(testScope(db, accountId), {});
    expect(second.cancelled).toHaveLength(2);
    expect(second.hasMore).toBe(false);
  });

  it('reports the cancels it made when the database stops answering part-way, and says more remain', async () => {
    const accountId = someAccount();
    const [a, b, c] = [await submitted(accountId), await submitted(accountId), await submitted(accountId)];
    // The read of the candidates and the first cancel answer; the database is gone from the second cancel on.
    let answered = 0;
    const goneAfterTwo: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        answered += 1;
        if (answered > 2) throw new Error('Connection terminated unexpectedly');
        return args.result;
      },
    };
    const interrupted = await cancelOrderSubmissions(testScope(db.withPlugin(goneAfterTwo), accountId), {});
    expect(interrupted.cancelled.map((row) => row.id)).toEqual([a.id]);
    expect(interrupted.hasMore).toBe(true);
    expect(interrupted.interruptedBy?.message).toBe('Connection terminated unexpectedly');

    const again = await cancelOrderSubmissions(testScope(db, accountId), {});
    expect(again.interruptedBy).toBeUndefined();
    expect((await Promise.all([a, b, c].map((order) => findOrder(db, accountId, order.id)))).map((order) => order?.status)).toEqual([
      'CANCELLED',
      'CANCELLED',
      'CANCELLED',
    ]);
  });

  it('lets any other failure through as it is', async () => {
    const accountId = someAccount();
    await submitted(accountId);
    const broken: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async () => {
        throw new Error('a bug, not an outage');
      },
    };
    await expect(cancelOrderSubmissions(testScope(db.withPlugin(broken), accountId), {})).rejects.toThrow('a bug, not an outage');
  });
});

describe('races, decided by the order row lock alone', () => {
  it('fill vs cancel: a fill executed before the cancel counts whichever commits first; one executed after counts only if it came first', async () => {
    for (let round = 0; round < 6; round += 1) {
      const accountId = someAccount();
      const order = await submitted(accountId);
      const early = fill(order.id, '2', new Date(Date.now() - 1_000));
      const after = fill(order.id, '3', new Date(Date.now() + 4_000));
      const [earlyResult, cancelResult, afterResult] = await Promise.all([
        sleep(Math.random() * 5).then(() => applyFill(testScope(db, accountId), early)),
        sleep(Math.random() * 5).then(() => cancelOrderSubmission(testScope(db, accountId), receiveId(order.id))),
        sleep(Math.random() * 5).then(() => applyFill(testScope(db, accountId), after)),
      ]);
      expect(earlyResult.outcome).toBe('APPLIED');
      expect(cancelResult.ok).toBe(true);
      const final = (await findOrder(db, accountId, order.id))!;
      expect(final.status).toBe('CANCELLED');
      const counted = 2 + (afterResult.outcome === 'APPLIED' ? 3 : 0);
      expect(d(final.filled_quantity).eq(counted)).toBe(true);
      // The executed-after fill counts exactly when it was applied before the cancel took effect.
      if (afterResult.outcome === 'APPLIED') expect(afterResult.order!.status).toBe('PARTIALLY_FILLED');
      else expect(afterResult.outcome).toBe('NOT_FILLABLE');
    }
  });

  it('fill vs replace: one consistent end — the fill on the old order, within its quantity, and exactly one replacement', async () => {
    for (let round = 0; round < 6; round += 1) {
      const accountId = someAccount();
      const order = await submitted(accountId);
      const early = fill(order.id, '10', new Date(Date.now() - 1_000));
      const [fillResult, replaceResult] = await Promise.all([
        sleep(Math.random() * 5).then(() => applyFill(testScope(db, accountId), early)),
        sleep(Math.random() * 5).then(() => replaceOrderSubmission(testScope(db, accountId), receiveId(order.id), { quantity: d('4') })),
      ]);
      expect(fillResult.outcome).toBe('APPLIED');
      const final = (await findOrder(db, accountId, order.id))!;
      expect(d(final.filled_quantity).eq(10)).toBe(true);
      const orders = await db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).execute();
      if (replaceResult.ok) {
        // Replace first: the fill arrived late, the old order keeps it and stays REPLACED.
        expect(final).toMatchObject({ status: 'REPLACED', replaced_by: replaceResult.value.order.id });
        expect(orders).toHaveLength(2);
      } else {
        // Fill first: the order was FILLED, so nothing was replaced.
        expect(replaceResult.error.code).toBe('ORDER_NOT_REPLACEABLE');
        expect(final.status).toBe('FILLED');
        expect(orders).toHaveLength(1);
      }
    }
  });

  it('cancel-all vs fills: every order ends FILLED (skipped, not reported) or CANCELLED (reported), never both, none lost', async () => {
    const accountId = someAccount();
    const orders = await Promise.all(Array.from({ length: 30 }, () => submitted(accountId, limitOrder({ quantity: d('2') }))));
    const fills = orders.filter((_, index) => index % 2 === 0).map((order) => fill(order.id, '2', new Date(Date.now() + 4_000)));
    const [result, ...fillResults] = await Promise.all([
      cancelOrderSubmissions(testScope(db, accountId), {}),
      ...fills.map((each) => sleep(Math.random() * 10).then(() => applyFill(testScope(db, accountId), each))),
    ]);
    const stored = await db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).execute();
    const reported = new Set(result.cancelled.map((row) => row.id));
    expect(reported.size).toBe(result.cancelled.length);
    for (const row of stored) {
      if (row.status === 'CANCELLED') expect(reported.has(row.id)).toBe(true);
      else {
        expect(row.status).toBe('FILLED');
        expect(reported.has(row.id)).toBe(false);
      }
    }
    const appliedFills = fillResults.filter((each) => each.outcome === 'APPLIED').length;
    expect(stored.filter((row) => row.status === 'FILLED')).toHaveLength(appliedFills);
    expect(result.cancelled.length + appliedFills).toBe(30);
    expect(result.hasMore).toBe(false);
  });
});
