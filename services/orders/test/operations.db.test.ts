import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase } from '@ots/shared/db';
import { Decimal } from '@ots/shared/decimal';
import type { Connection } from '@ots/shared/pagination';
import { SealedFeedCursors } from '@ots/shared/sealed-cursors';
import { newId, parseUuid, receiveId } from '@ots/shared/ids';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import { testScope } from '@ots/shared/testing/scope';
import type { StrategyStatus } from '../src/domain.ts';
import {
  applyFill,
  cancelOrderSubmission,
  cancelOrderSubmissions,
  listOrderSubmissions,
  replaceOrderSubmission,
  strategyOrdersLoaders,
  submitOrder,
  type FillRequest,
  type SubmitOrderRequest,
} from '../src/operations.ts';
import { orderEvent } from '../src/mappers.ts';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { findOrder, lockOrder, markCancelled, type OrderRow, type OrdersDatabase, type OrdersDb } from '../src/repository.ts';
import { listRequest } from '../src/resolvers.ts';
import { listCursorsOf } from './support/list-cursors.ts';
import type { StrategyLookup } from '../src/strategy-lookup.ts';
import { useSchemaDatabase } from '@ots/shared/testing/database';
import { someAccount } from './support/accounts.ts';

/**
 * The use cases against a real Postgres, without a server: concurrency, locking and the sync's
 * commit order are properties of the SQL, so they are tested where they can be forced.
 */

const { db, url } = await useSchemaDatabase<OrdersDatabase>({ schema: SCHEMA, migrations }, { applicationName: 'orders-test', maxConnections: 30 });

const d = (value: string) => new Decimal(value);

function limitOrder(overrides: Partial<SubmitOrderRequest> = {}): SubmitOrderRequest {
  return { symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: d('10'), limitPrice: d('187.25'), ...overrides };
}

/** A strategies subgraph stand-in that records what it was asked. */
function strategies(statuses: Record<string, StrategyStatus> = {}, unavailable = false) {
  const asked: string[] = [];
  const lookup: StrategyLookup = async (id) => {
    asked.push(id);
    if (unavailable) throw new SubgraphUnavailableError('strategies did not answer');
    return statuses[id] ?? null;
  };
  return { asked, lookup };
}

async function submitted(accountId: string, input: SubmitOrderRequest = limitOrder()): Promise<OrderRow> {
  const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies().lookup }, input);
  if (!result.ok) throw new Error(`submission refused: ${result.error.message}`);
  return result.value;
}

const fill = (orderSubmissionId: string, quantity: string, price: string, executionId = newId()): FillRequest => ({
  executionId,
  orderSubmissionId: parseUuid(orderSubmissionId),
  quantity: d(quantity),
  price: d(price),
  fee: d('0'),
  liquidity: 'UNKNOWN',
});

async function countOrders(accountId: string): Promise<number> {
  const row = await db
    .selectFrom('order_submissions')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

describe('submitOrder', () => {
  it('stores the normalised order: upper-cased symbol, DAY by default, exact decimals, SUBMITTED', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ symbol: 'brk.b', quantity: d('10.500'), limitPrice: d('0.0000000001') }));
    expect(order).toMatchObject({ account_id: accountId, symbol: 'BRK.B', time_in_force: 'DAY', status: 'SUBMITTED' });
    expect(d(order.quantity).eq('10.5')).toBe(true);
    expect(d(order.limit_price!).eq('0.0000000001')).toBe(true);
    expect(d(order.filled_quantity).isZero()).toBe(true);
    expect(order.submitted_at.getTime()).toBe(order.updated_at.getTime());
    expect(order.cancelled_at).toBeNull();
  });

  it('answers a retry with the same fields (decimals compared by value) with the stored order', async () => {
    const accountId = someAccount();
    const first = await submitted(accountId, limitOrder({ clientOrderId: 'retry-1', symbol: 'msft', quantity: d('10.50') }));
    const retry = await submitOrder(
      { ...testScope(db, accountId), lookupStrategy: strategies().lookup },
      limitOrder({ clientOrderId: 'retry-1', symbol: 'MSFT', quantity: d('10.5'), timeInForce: 'DAY', limitPrice: d('187.250') }),
    );
    expect(retry).toEqual({ ok: true, value: first });
    expect(await countOrders(accountId)).toBe(1);
  });

  it.each([
    ['quantity', { quantity: d('11') }],
    ['symbol', { symbol: 'MSFT' }],
    ['side', { side: 'SELL' as const }],
    ['timeInForce', { timeInForce: 'GTC' as const }],
    ['limitPrice', { limitPrice: d('187.26') }],
    ['type', { type: 'STOP_LIMIT' as const, stopPrice: d('180') }],
  ])('refuses a reused clientOrderId whose %s differs, creating nothing', async (_field, change) => {
    const accountId = someAccount();
    await submitted(accountId, limitOrder({ clientOrderId: 'dup-1' }));
    const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies().lookup }, limitOrder({ clientOrderId: 'dup-1', ...change }));
    expect(result).toMatchObject({ ok: false, error: { code: 'DUPLICATE_CLIENT_ORDER_ID', field: 'clientOrderId' } });
    expect(await countOrders(accountId)).toBe(1);
  });

  it('scopes clientOrderId to the account', async () => {
    const [a, b] = [someAccount(), someAccount()];
    const orderA = await submitted(a, limitOrder({ clientOrderId: 'shared-id' }));
    const orderB = await submitted(b, limitOrder({ clientOrderId: 'shared-id', quantity: d('3') }));
    expect(orderB.id).not.toBe(orderA.id);
  });

  it('never deduplicates orders without a clientOrderId', async () => {
    const accountId = someAccount();
    await submitted(accountId);
    await submitted(accountId);
    expect(await countOrders(accountId)).toBe(2);
  });

  it('creates exactly one order from 25 concurrent identical submissions, and answers all of them with it', async () => {
    const accountId = someAccount();
    const input = limitOrder({ clientOrderId: 'burst-1' });
    const results = await Promise.all(
      Array.from({ length: 25 }, () => submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies().lookup }, input)),
    );
    const ids = new Set(results.map((result) => (result.ok ? result.value.id : result.error.code)));
    expect(ids.size).toBe(1);
    expect(results.every((result) => result.ok)).toBe(true);
    expect(await countOrders(accountId)).toBe(1);
  });

  it('lets one of 10 concurrent different submissions with one clientOrderId win; the others get DUPLICATE_CLIENT_ORDER_ID', async () => {
    const accountId = someAccount();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies().lookup }, limitOrder({ clientOrderId: 'race-1', quantity: d(String(i + 1)) })),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(results.filter((result) => !result.ok && result.error.code === 'DUPLICATE_CLIENT_ORDER_ID')).toHaveLength(9);
    expect(await countOrders(accountId)).toBe(1);
  });

  describe('with a strategy', () => {
    const active = newId();
    const paused = newId();
    const archived = newId();
    const statuses: Record<string, StrategyStatus> = { [active]: 'ACTIVE', [paused]: 'PAUSED', [archived]: 'ARCHIVED' };

    it('stores the strategy of an ACTIVE strategy, having asked the strategies subgraph', async () => {
      const accountId = someAccount();
      const lookup = strategies(statuses);
      const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: lookup.lookup }, limitOrder({ strategyId: receiveId(active) }));
      expect(result).toMatchObject({ ok: true, value: { strategy_id: active } });
      expect(lookup.asked).toEqual([active]);
    });

    it.each([
      ['PAUSED', paused],
      ['ARCHIVED', archived],
    ])('refuses a %s strategy with STRATEGY_NOT_ACTIVE and creates nothing', async (_status, strategyId) => {
      const accountId = someAccount();
      const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies(statuses).lookup }, limitOrder({ strategyId: receiveId(strategyId) }));
      expect(result).toMatchObject({ ok: false, error: { code: 'STRATEGY_NOT_ACTIVE', field: 'strategyId' } });
      expect(await countOrders(accountId)).toBe(0);
    });

    it('refuses a strategy the subgraph does not know (absent or foreign) with NOT_FOUND on strategyId', async () => {
      const accountId = someAccount();
      const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies(statuses).lookup }, limitOrder({ strategyId: receiveId(newId()) }));
      expect(result).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', field: 'strategyId' } });
      expect(await countOrders(accountId)).toBe(0);
    });

    it('answers a strategyId that is not a UUID with NOT_FOUND without asking', async () => {
      const lookup = strategies(statuses);
      const result = await submitOrder({ ...testScope(db, someAccount()), lookupStrategy: lookup.lookup }, limitOrder({ strategyId: receiveId('strategy-7') }));
      expect(result).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', field: 'strategyId' } });
      expect(lookup.asked).toEqual([]);
    });

    it('does not ask about the strategy of an invalid submission', async () => {
      const lookup = strategies(statuses);
      const result = await submitOrder(
        { ...testScope(db, someAccount()), lookupStrategy: lookup.lookup },
        limitOrder({ strategyId: receiveId(active), quantity: d('0') }),
      );
      expect(result).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED', field: 'quantity' } });
      expect(lookup.asked).toEqual([]);
    });

    it('returns TEMPORARILY_UNAVAILABLE and creates nothing when strategies does not answer', async () => {
      const accountId = someAccount();
      const result = await submitOrder(
        { ...testScope(db, accountId), lookupStrategy: strategies(statuses, true).lookup },
        limitOrder({ strategyId: receiveId(active), clientOrderId: 'later-1' }),
      );
      expect(result).toMatchObject({ ok: false, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
      expect(await countOrders(accountId)).toBe(0);
      const retry = await submitOrder(
        { ...testScope(db, accountId), lookupStrategy: strategies(statuses).lookup },
        limitOrder({ strategyId: receiveId(active), clientOrderId: 'later-1' }),
      );
      expect(retry.ok).toBe(true);
    });

    it('answers a retry of a stored order from the store, even after its strategy stopped answering', async () => {
      const accountId = someAccount();
      const first = await submitOrder({ ...testScope(db, accountId), lookupStrategy: strategies(statuses).lookup }, limitOrder({ strategyId: receiveId(active), clientOrderId: 'kept-1' }));
      const unavailable = strategies(statuses, true);
      const retry = await submitOrder({ ...testScope(db, accountId), lookupStrategy: unavailable.lookup }, limitOrder({ strategyId: receiveId(active.toUpperCase()), clientOrderId: 'kept-1' }));
      expect(retry).toEqual(first);
      expect(unavailable.asked).toEqual([]);
    });
  });
});

describe('cancelOrderSubmission', () => {
  it('cancels a SUBMITTED order with cancelledAt and a newer updatedAt, and returns a cancelled one unchanged', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    const cancelled = await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id));
    if (!cancelled.ok) throw new Error(cancelled.error.message);
    expect(cancelled.value.status).toBe('CANCELLED');
    expect(cancelled.value.cancelled_at).toEqual(cancelled.value.updated_at);
    expect(cancelled.value.updated_at.getTime()).toBeGreaterThan(order.updated_at.getTime());
    const again = await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id));
    expect(again).toEqual(cancelled);
  });

  it('stamps a cancel that waited for the order (locked, not changed, by another transaction) with when it took effect, not when it began to wait', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    let locked!: () => void;
    const lockHeld = new Promise<void>((resolve) => (locked = resolve));
    let releasedAt = 0;
    const holder = db.transaction().execute(async (trx) => {
      await lockOrder(trx, accountId, order.id);
      locked();
      await sleep(400);
      releasedAt = Date.now();
    });
    await lockHeld;
    const cancelled = await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id));
    await holder;
    if (!cancelled.ok) throw new Error(cancelled.error.message);
    // Postgres rounds the stamp to the millisecond: up to half of one earlier than the clock.
    expect(cancelled.value.cancelled_at!.getTime()).toBeGreaterThanOrEqual(releasedAt - 1);
  });

  it('cancels a PARTIALLY_FILLED order and keeps its fills', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    await applyFill(testScope(db, accountId), fill(order.id, '4', '100'));
    const cancelled = await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id));
    expect(cancelled).toMatchObject({ ok: true, value: { status: 'CANCELLED', filled_quantity: '4.0000000000' } });
  });

  it('refuses a FILLED order with ORDER_NOT_CANCELLABLE and leaves it as it was', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    const filled = await applyFill(testScope(db, accountId), fill(order.id, '10', '100'));
    const result = await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id));
    expect(result).toMatchObject({ ok: false, error: { code: 'ORDER_NOT_CANCELLABLE', field: 'id' } });
    expect(await findOrder(db, accountId, order.id)).toEqual(filled.order);
  });

  it('answers another account\'s order, a missing id and a non-UUID alike with NOT_FOUND', async () => {
    const owner = someAccount();
    const order = await submitted(owner);
    const stranger = testScope(db, someAccount());
    const results = await Promise.all([order.id, newId(), 'not-an-id'].map((id) => cancelOrderSubmission(stranger, receiveId(id))));
    for (const result of results) expect(result).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } });
    expect((await findOrder(db, owner, order.id))?.status).toBe('SUBMITTED');
  });
});

describe('applyFill', () => {
  it('moves SUBMITTED to PARTIALLY_FILLED to FILLED with the exact quantity-weighted notional', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('3') }));
    const first = await applyFill(testScope(db, accountId), fill(order.id, '1', '10.1'));
    expect(first.outcome).toBe('APPLIED');
    expect(first.order).toMatchObject({ status: 'PARTIALLY_FILLED' });
    const second = await applyFill(testScope(db, accountId), fill(order.id, '2', '10.2'));
    expect(second.outcome).toBe('APPLIED');
    expect(second.order?.status).toBe('FILLED');
    expect(d(second.order!.filled_quantity).eq(3)).toBe(true);
    expect(d(second.order!.fill_notional).eq('30.5')).toBe(true);
    expect(second.order!.updated_at.getTime()).toBeGreaterThan(first.order!.updated_at.getTime());
  });

  it('applies an execution id once: a retry is ALREADY_APPLIED, even once the order is FILLED', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('2') }));
    const once = fill(order.id, '1', '5');
    await applyFill(testScope(db, accountId), once);
    const retry = await applyFill(testScope(db, accountId), once);
    expect(retry.outcome).toBe('ALREADY_APPLIED');
    expect(d(retry.order!.filled_quantity).eq(1)).toBe(true);
    await applyFill(testScope(db, accountId), fill(order.id, '1', '5'));
    const lateRetry = await applyFill(testScope(db, accountId), once);
    expect(lateRetry).toMatchObject({ outcome: 'ALREADY_APPLIED', order: { status: 'FILLED' } });
  });

  it('refuses a fill beyond the remaining quantity, and any fill of a FILLED or CANCELLED order, changing nothing', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('2') }));
    expect((await applyFill(testScope(db, accountId), fill(order.id, '2.0000000001', '5'))).outcome).toBe('EXCEEDS_REMAINING');
    await applyFill(testScope(db, accountId), fill(order.id, '2', '5'));
    expect((await applyFill(testScope(db, accountId), fill(order.id, '1', '5'))).outcome).toBe('NOT_FILLABLE');
    const cancelled = await submitted(accountId);
    await cancelOrderSubmission(testScope(db, accountId), receiveId(cancelled.id));
    const refused = await applyFill(testScope(db, accountId), fill(cancelled.id, '1', '5'));
    expect(refused).toMatchObject({ outcome: 'NOT_FILLABLE', order: { id: cancelled.id, status: 'CANCELLED' } });
    expect(d(refused.order!.filled_quantity).isZero()).toBe(true);
  });

  it('answers another account\'s order, a missing id and a non-UUID with NOT_FOUND and no order', async () => {
    const order = await submitted(someAccount());
    const stranger = testScope(db, someAccount());
    for (const id of [order.id, newId(), 'order-1']) {
      expect(await applyFill(stranger, fill(id, '1', '1'))).toEqual({ outcome: 'NOT_FOUND', fill: null, order: null });
    }
  });

  it('applies concurrent fills one at a time: never beyond the quantity, the notional exactly that of the applied ones', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('10') }));
    const fills = Array.from({ length: 16 }, (_, i) => fill(order.id, '1', `${100 + i}.01`));
    const results = await Promise.all(fills.map((each) => applyFill(testScope(db, accountId), each)));
    expect(results.filter((result) => result.outcome === 'APPLIED')).toHaveLength(10);
    expect(results.filter((result) => result.outcome === 'NOT_FILLABLE')).toHaveLength(6);
    const final = (await findOrder(db, accountId, order.id))!;
    expect(final.status).toBe('FILLED');
    expect(d(final.filled_quantity).eq(10)).toBe(true);
    const appliedNotional = fills
      .filter((_, i) => results[i]!.outcome === 'APPLIED')
      .reduce((sum, each) => sum.plus(each.price), new Decimal(0));
    expect(d(final.fill_notional).eq(appliedNotional)).toBe(true);
  });

  it('applies one fill id sent concurrently exactly once', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('10') }));
    const same = fill(order.id, '3', '7');
    const results = await Promise.all(Array.from({ length: 12 }, () => applyFill(testScope(db, accountId), same)));
    expect(results.filter((result) => result.outcome === 'APPLIED')).toHaveLength(1);
    expect(results.filter((result) => result.outcome === 'ALREADY_APPLIED')).toHaveLength(11);
    expect(d((await findOrder(db, accountId, order.id))!.filled_quantity).eq(3)).toBe(true);
  });
});

describe('applyFill on an account with fills recorded before orders kept execution ids', () => {
  it('leaves a fill undecided for a fills release that checks its own fills, and decides it as before for one from before that answer', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('10') }));
    const recorded = await applyFill(testScope(db, accountId), fill(order.id, '1', '10'));
    // As a release before migration 005 left it.
    await db.updateTable('fill_applications').set({ execution_id: null, fee: null, liquidity: null, executed_at: null }).where('fill_id', '=', recorded.fill!.fill_id).execute();

    const checking = await applyFill(testScope(db, accountId), { ...fill(order.id, '2', '10'), checksRecordedBeforeUpgrade: true });
    expect(checking).toMatchObject({ outcome: 'MAYBE_RECORDED_BEFORE_UPGRADE', fill: null });
    const older = await applyFill(testScope(db, accountId), fill(order.id, '2', '10'));
    expect(older.outcome).toBe('APPLIED');
    expect(d((await findOrder(db, accountId, order.id))!.filled_quantity).eq(3)).toBe(true);
  });
});

describe('applyFill while another orders process writes the same order', () => {
  /** A second orders process: its own pool. */
  const otherProcess = createDatabase<OrdersDatabase>({ url, schema: SCHEMA, applicationName: 'orders-test-other', maxConnections: 4 });
  afterAll(() => otherProcess.destroy());

  it('decides on the current version when another process changed the order since: fills add up, a cancel refuses', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('10') }));
    expect((await applyFill(testScope(db, accountId), fill(order.id, '1', '10'))).outcome).toBe('APPLIED');
    expect((await applyFill(testScope(otherProcess, accountId), fill(order.id, '2', '13'))).outcome).toBe('APPLIED');
    const third = await applyFill(testScope(db, accountId), fill(order.id, '3', '11'));
    expect(third.outcome).toBe('APPLIED');
    expect(d(third.order!.filled_quantity).eq(6)).toBe(true);
    expect(d(third.order!.fill_notional).eq(10 + 26 + 33)).toBe(true);

    await cancelOrderSubmission(testScope(otherProcess, accountId), receiveId(order.id));
    const afterCancel = await applyFill(testScope(db, accountId), { ...fill(order.id, '1', '10'), executedAt: new Date(Date.now() + 1_000) });
    expect(afterCancel).toMatchObject({ outcome: 'NOT_FILLABLE', order: { status: 'CANCELLED' } });
    expect(d((await findOrder(db, accountId, order.id))!.filled_quantity).eq(6)).toBe(true);
  });

  it('answers an execution id applied already with ALREADY_APPLIED, whichever process applied it, and counts it once', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId, limitOrder({ quantity: d('10') }));
    const byOther = fill(order.id, '2', '5');
    await applyFill(testScope(db, accountId), fill(order.id, '1', '5'));
    await applyFill(testScope(otherProcess, accountId), byOther);
    expect(await applyFill(testScope(db, accountId), byOther)).toMatchObject({ outcome: 'ALREADY_APPLIED' });
    const again = await applyFill(testScope(db, accountId), byOther);
    expect(again.outcome).toBe('ALREADY_APPLIED');
    expect(d(again.order!.filled_quantity).eq(3)).toBe(true);
    expect(d((await findOrder(db, accountId, order.id))!.filled_quantity).eq(3)).toBe(true);
  });

  it('answers the fill another process recorded under the same execution id on another order while this one waited for its lock', async () => {
    const accountId = someAccount();
    const [mine, theirs] = [await submitted(accountId, limitOrder({ quantity: d('10') })), await submitted(accountId, limitOrder({ quantity: d('10') }))];
    const executionId = newId();
    // The statements this process runs, in order: the read and the write that find the order changed
    // by the other process, then, under the lock, the read after which the other process records the
    // same execution id on the other order, and the write that then collides with it.
    let answered = 0;
    const interleaved = db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        answered += 1;
        if (answered === 1) await applyFill(testScope(otherProcess, accountId), fill(mine.id, '1', '10'));
        if (answered === 4) expect((await applyFill(testScope(otherProcess, accountId), fill(theirs.id, '2', '10', executionId))).outcome).toBe('APPLIED');
        return args.result;
      },
    });
    const result = await applyFill(testScope(interleaved, accountId), fill(mine.id, '2', '10', executionId));
    expect(result).toMatchObject({ outcome: 'ALREADY_APPLIED', order: { id: theirs.id } });
    expect(d((await findOrder(db, accountId, mine.id))!.filled_quantity).eq(1)).toBe(true);
  });
});

/** The same database handle, pausing a random while after each statement: inside a transaction, between its lock and its commit. */
function withRandomDelays(maxMs: number): OrdersDb {
  return db.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      await sleep(Math.random() * maxMs);
      return args.result;
    },
  });
}

/** Cancels `order` inside the open transaction `trx`, which holds its row lock until it ends. */
const cancelIn = (trx: OrdersDb, order: OrderRow) =>
  markCancelled(trx, order.account_id, order.id, order.commit_xid, orderEvent('order_submission.cancelled', { ...order, status: 'CANCELLED' }));

/** Pages the sync forward from `cursor` to the end; returns the rows seen and the cursor to continue from. */
async function syncFrom(accountId: string, cursor: string | null) {
  const rows: OrderRow[] = [];
  for (;;) {
    const page = await listOrderSubmissions(testScope(db, accountId), listRequest({ orderBy: 'UPDATED_AT_ASC', first: 7, after: cursor }, listCursorsOf(accountId)));
    rows.push(...page.nodes);
    cursor = page.pageInfo.endCursor ?? cursor;
    if (!page.pageInfo.hasNextPage) return { rows, cursor };
  }
}

/** Each order's version: what a client that keeps the last version of each id ends with. */
const stateOf = (rows: Iterable<OrderRow>) => new Map([...rows].map((row) => [row.id, [row.status, row.filled_quantity, row.updated_at.getTime()]]));

const storedOrders = (accountId: string) => db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).execute();

/**
 * Gives the orders one change each, all stamped in one millisecond by one statement (at least 1 ms
 * after each one's last change, as every write stamps): what concurrent writes of an account may do.
 */
async function changedInOneMillisecond(ids: readonly string[]): Promise<void> {
  await sql`
    update order_submissions set updated_at = clock.now
    from (select greatest(clock_timestamp()::timestamptz(3),
      (select max(updated_at) + interval '1 millisecond' from order_submissions where id = any(${ids}::uuid[]))) as now) as clock
    where id = any(${ids}::uuid[])`.execute(db);
}

/**
 * Stamps each group of orders with one millisecond of its own, one after the other, in one statement:
 * changes of one account that share a millisecond, exactly as the test means them.
 */
async function changedInMilliseconds(groups: readonly (readonly string[])[]): Promise<void> {
  const ids = groups.flat();
  const offsets = groups.flatMap((group, index) => group.map(() => index));
  await sql`
    update order_submissions set updated_at = clock.now + make_interval(secs => grouped.ms / 1000.0)
    from (select greatest(clock_timestamp()::timestamptz(3),
      (select max(updated_at) + interval '1 millisecond' from order_submissions where id = any(${ids}::uuid[]))) as now) as clock,
      unnest(${ids}::uuid[], ${offsets}::int[]) as grouped(id, ms)
    where order_submissions.id = grouped.id`.execute(db);
}

/**
 * A sync client that keeps nothing but the highest `updatedAt` it has seen, and asks for what changed
 * strictly after it, `first` at a time, never with a cursor (contract section 4's client).
 */
function updatedAfterClient(accountId: string, first: number) {
  let kept = new Date(0);
  const latest = new Map<string, OrderRow>();
  const poll = async () => {
    for (;;) {
      const page = await listOrderSubmissions(
        testScope(db, accountId),
        listRequest({ orderBy: 'UPDATED_AT_ASC', first, filter: { updatedAfter: kept } }, listCursorsOf(accountId)),
      );
      const stamps = page.nodes.map((row) => row.updated_at.getTime());
      expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
      for (const row of page.nodes) {
        latest.set(row.id, row);
        if (row.updated_at > kept) kept = row.updated_at;
      }
      if (!page.pageInfo.hasNextPage) return;
    }
  };
  return { poll, latest };
}

/** A sync client that keeps the last endCursor (never null) and checks it is given no version twice, in updatedAt order throughout. */
function cursorClient(list: (after: string | null) => Promise<Connection<OrderRow>>) {
  let cursor: string | null = null;
  let lastStamp = 0;
  const versions = new Set<string>();
  const latest = new Map<string, OrderRow>();
  const poll = async () => {
    for (;;) {
      const page = await list(cursor);
      for (const row of page.nodes) {
        expect(row.updated_at.getTime()).toBeGreaterThanOrEqual(lastStamp);
        lastStamp = row.updated_at.getTime();
        const version = `${row.id}@${lastStamp}`;
        expect(versions.has(version), `${version} given twice`).toBe(false);
        versions.add(version);
        latest.set(row.id, row);
      }
      expect(page.pageInfo.endCursor).toEqual(expect.any(String));
      cursor = page.pageInfo.endCursor;
      if (!page.pageInfo.hasNextPage) return;
    }
  };
  return { poll, latest };
}

const listSync = (accountId: string, first: number) => (after: string | null) =>
  listOrderSubmissions(testScope(db, accountId), listRequest({ orderBy: 'UPDATED_AT_ASC', first, after }, listCursorsOf(accountId)));

/** Changes three orders so that the one committed first in transaction-id order is stamped last: b and c, then a. */
async function changedOutOfStampOrder(accountId: string, [a, b, c]: readonly OrderRow[]): Promise<void> {
  const open = await db.startTransaction().execute();
  try {
    // The row lock gives the transaction its id now, before the two cancels below take theirs.
    await lockOrder(open, accountId, a!.id);
    for (const order of [b!, c!]) expect(await cancelOrderSubmission(testScope(db, accountId), receiveId(order.id))).toMatchObject({ ok: true });
    await cancelIn(open, a!);
    await open.commit().execute();
  } catch (error) {
    await open.rollback().execute();
    throw error;
  }
}

describe('writes of one account run side by side', () => {
  it('a write of one order (submit, cancel, fill, replace, cancel-all of other orders) does not wait for a long transaction on another order of the same account', async () => {
    const accountId = someAccount();
    const [held, other, toFill, toReplace] = [
      await submitted(accountId),
      await submitted(accountId),
      await submitted(accountId),
      await submitted(accountId),
    ];
    const elsewhere = await submitted(accountId, limitOrder({ symbol: 'MSFT' }));
    const open = await db.startTransaction().execute();
    await cancelIn(open, held);
    try {
      const writes = Promise.all([
        submitted(accountId),
        cancelOrderSubmission(testScope(db, accountId), receiveId(other.id)),
        applyFill(testScope(db, accountId), fill(toFill.id, '1', '10')),
        replaceOrderSubmission(testScope(db, accountId), receiveId(toReplace.id), { quantity: d('3') }),
        cancelOrderSubmissions(testScope(db, accountId), { symbol: 'MSFT' }),
      ]);
      const outcome = await Promise.race([writes, sleep(3_000).then(() => 'still waiting' as const)]);
      expect(outcome).not.toBe('still waiting');
      const [, cancelled, filled, replaced, cancelAll] = outcome as Awaited<typeof writes>;
      expect(cancelled).toMatchObject({ ok: true, value: { status: 'CANCELLED' } });
      expect(filled.outcome).toBe('APPLIED');
      expect(replaced).toMatchObject({ ok: true, value: { replaced: { status: 'REPLACED' } } });
      expect(cancelAll.cancelled.map((row) => row.id)).toEqual([elsewhere.id]);
    } finally {
      await open.rollback().execute();
    }
  });

  it('writes of one order still apply one at a time: a cancel waits for an open fill of the same order', async () => {
    const accountId = someAccount();
    const order = await submitted(accountId);
    const open = await db.startTransaction().execute();
    await cancelIn(open, order);
    let cancelDone = false;
    const cancel = cancelOrderSubmission(testScope(db, accountId), receiveId(order.id)).then((result) => ((cancelDone = true), result));
    await sleep(200);
    expect(cancelDone).toBe(false);
    await open.rollback().execute();
    expect(await cancel).toMatchObject({ ok: true, value: { status: 'CANCELLED' } });
  });
});

  it('a write that loses the race to another write of the same order is decided again on the new version', async () => {
    const accountId = someAccount();
    const [toFill, toCancel] = [await submitted(accountId), await submitted(accountId)];
    // Each write below reads its order before the open cancel commits, then finds it changed.
    const openFill = await db.startTransaction().execute();
    await cancelIn(openFill, toFill);
    const lateFill = applyFill(testScope(db, accountId), fill(toFill.id, '4', '10'));
    const openCancel = await db.startTransaction().execute();
    await cancelIn(openCancel, toCancel);
    const secondCancel = cancelOrderSubmission(testScope(db, accountId), receiveId(toCancel.id));
    await sleep(200);
    await openFill.commit().execute();
    await openCancel.commit().execute();

    // Executed now, after the cancel: not a late fill, so refused on the cancelled order.
    expect(await lateFill).toMatchObject({ outcome: 'NOT_FILLABLE', order: { status: 'CANCELLED' } });
    const refused = (await findOrder(db, accountId, toFill.id))!;
    expect([refused.status, new Decimal(refused.filled_quantity).toFixed()]).toEqual(['CANCELLED', '0']);
    // A cancel that finds the order cancelled answers it unchanged, with the first cancel's time.
    const cancelledFirst = (await findOrder(db, accountId, toCancel.id))!;
    expect(await secondCancel).toMatchObject({ ok: true, value: { status: 'CANCELLED', updated_at: cancelledFirst.updated_at } });
  });

describe('the incremental sync (UPDATED_AT_ASC, paged by change stamp up to the settled stamp)', () => {
  it('holds back a change committed after one still in flight, then hands out both ahead of the cursor', async () => {
    const accountId = someAccount();
    const [slow, fast] = [await submitted(accountId), await submitted(accountId)];
    // Other tests share the server: their writes in flight hold the horizon back for a moment.
    let start = await syncFrom(accountId, null);
    await expect.poll(async () => (start = await syncFrom(accountId, null)).rows.map((row) => row.id)).toEqual([slow.id, fast.id]);

    const open = await db.startTransaction().execute();
    const slowCancel = (await cancelIn(open, slow))!;
    const fastCancel = await cancelOrderSubmission(testScope(db, accountId), receiveId(fast.id));
    if (!fastCancel.ok) throw new Error(fastCancel.error.message);
    // The fast cancel committed, but handing it out now would let the slow one land behind the cursor.
    const held = await syncFrom(accountId, start.cursor);
    expect(held.rows).toEqual([]);
    expect(held.cursor).toEqual(expect.any(String));
    await open.commit().execute();

    let next = await syncFrom(accountId, start.cursor);
    await expect.poll(async () => (next = await syncFrom(accountId, start.cursor)).rows.map((row) => [row.id, row.status])).toEqual([
      [slow.id, 'CANCELLED'],
      [fast.id, 'CANCELLED'],
    ]);
    expect(next.rows[0]!.updated_at).toEqual(slowCancel.updated_at);
  });

  it('lets a client that keeps the last updatedAt it saw miss nothing: a change waits for any stamped before it that has not committed yet', async () => {
    const accountId = someAccount();
    const poll = async (updatedAfter: Date) =>
      (await listOrderSubmissions(testScope(db, accountId), listRequest({ orderBy: 'UPDATED_AT_ASC', filter: { updatedAfter } }, listCursorsOf(accountId)))).nodes;
    let kept = new Date(Date.now() - 60_000);
    const seen = new Set<string>();
    const keep = (rows: readonly OrderRow[]) => {
      for (const row of rows) {
        seen.add(row.id);
        if (row.updated_at > kept) kept = row.updated_at;
      }
    };
    // Stamped first, committed last: the submit inside the open transaction.
    const open = await db.startTransaction().execute();
    const earlier = await submitOrder({ ...testScope(open, accountId), lookupStrategy: strategies().lookup }, limitOrder());
    if (!earlier.ok) throw new Error(earlier.error.message);
    await sleep(5);
    const later = await submitted(accountId);
    keep(await poll(kept));
    await open.commit().execute();
    expect(earlier.value.updated_at.getTime()).toBeLessThan(later.updated_at.getTime());
    await expect.poll(async () => (keep(await poll(kept)), [...seen].sort())).toEqual([earlier.value.id, later.id].sort());
  });

  it('is not held back by a transaction of another program on the same database and role (a psql session left open)', async () => {
    const accountId = someAccount();
    const psql = new pg.Client({ connectionString: url, application_name: 'psql' });
    await psql.connect();
    try {
      await psql.query('begin');
      await psql.query('select 1');
      const order = await submitted(accountId);
      await expect
        .poll(async () => (await listOrderSubmissions(testScope(db, accountId), listRequest({ orderBy: 'UPDATED_AT_ASC' }, listCursorsOf(accountId)))).nodes.map((row) => row.id))
        .toEqual([order.id]);
    } finally {
      await psql.end();
    }
  });

  it('keeps updatedAfter a plain filter: changed strictly after the instant', async () => {
    const accountId = someAccount();
    const first = await submitted(accountId);
    const second = await submitted(accountId);
    await expect
      .poll(async () => (await listOrderSubmissions(testScope(db, accountId), listRequest({ orderBy: 'UPDATED_AT_ASC', filter: { updatedAfter: first.updated_at } }, listCursorsOf(accountId)))).nodes.map((row) => row.id))
      .toEqual(second.updated_at > first.updated_at ? [second.id] : []);
  });

  it('lets a reader syncing in a loop during concurrent orders, cancels, fills, replaces and a cancel-all with random delays inside their transactions end with exactly the final state, never a version out of order', async () => {
    const accountId = someAccount();
    const slowDb = withRandomDelays(8);
    const scope = testScope(slowDb, accountId);
    const orders = await Promise.all(Array.from({ length: 12 }, () => submitted(accountId, limitOrder({ quantity: d('6') }))));
    const writer = async (worker: number) => {
      for (let step = 1; step <= 18; step += 1) {
        const target = orders[(worker * 5 + step) % orders.length]!;
        if (step % 7 === 0) await cancelOrderSubmission(scope, receiveId(target.id));
        else if (step % 9 === 0) await replaceOrderSubmission(scope, receiveId(target.id), { quantity: d('6') });
        else if (step === 17 && worker === 0) await cancelOrderSubmissions(scope, { side: 'SELL' });
        else if (step % 4 === 0) await submitOrder({ ...scope, lookupStrategy: strategies().lookup }, limitOrder({ quantity: d('6'), side: step % 8 === 0 ? 'SELL' : 'BUY' }));
        else await applyFill(scope, fill(target.id, '1', `${10 + worker}.5`));
      }
    };

    const latest = new Map<string, OrderRow>();
    let cursor: string | null = null;
    let lastStamp = 0;
    const sync = async () => {
      const { rows, cursor: next } = await syncFrom(accountId, cursor);
      for (const row of rows) {
        const previous = latest.get(row.id);
        // An order comes again only after a later change of it: never an older or the same version.
        if (previous) expect(row.updated_at.getTime()).toBeGreaterThan(previous.updated_at.getTime());
        // The whole sync, page after page, in updatedAt order.
        expect(row.updated_at.getTime()).toBeGreaterThanOrEqual(lastStamp);
        lastStamp = row.updated_at.getTime();
        latest.set(row.id, row);
      }
      cursor = next;
    };
    let writing = true;
    const reader = (async () => {
      while (writing) await sync();
    })();
    try {
      await Promise.all(Array.from({ length: 6 }, (_, worker) => writer(worker)));
    } finally {
      writing = false;
      await reader;
    }
    const stored = await db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).execute();
    expect(stored.length).toBeGreaterThan(12);
    expect(stored.some((row) => row.status === 'CANCELLED') && stored.some((row) => row.status === 'PARTIALLY_FILLED' || row.status === 'FILLED')).toBe(true);
    const versions = (rows: Iterable<OrderRow>) => new Map([...rows].map((row) => [row.id, [row.status, row.filled_quantity, row.updated_at.getTime()]]));
    // Syncing on until the horizon has passed the last write (other tests' transactions may hold it back a moment).
    await expect.poll(async () => (await sync(), versions(latest.values()))).toEqual(versions(stored));
  });

  it('lets a client that keeps only the highest updatedAt, 2 at a time, miss no change committed out of stamp order', async () => {
    const accountId = someAccount();
    const orders = [await submitted(accountId), await submitted(accountId), await submitted(accountId)];
    const client = updatedAfterClient(accountId, 2);
    await expect.poll(async () => (await client.poll(), client.latest.size)).toBe(3);
    await changedOutOfStampOrder(accountId, orders);
    await expect.poll(async () => (await client.poll(), stateOf(client.latest.values()))).toEqual(stateOf(await storedOrders(accountId)));
  });

  it('lets a client that keeps only the highest updatedAt, 2 at a time, miss no change of the millisecond a full page would end in', async () => {
    const accountId = someAccount();
    const [o1, o2, o3] = [await submitted(accountId), await submitted(accountId), await submitted(accountId)];
    const client = updatedAfterClient(accountId, 2);
    await expect.poll(async () => (await client.poll(), client.latest.size)).toBe(3);
    await changedInMilliseconds([[o1!.id], [o2!.id, o3!.id]]);
    await expect.poll(async () => (await client.poll(), stateOf(client.latest.values()))).toEqual(stateOf(await storedOrders(accountId)));
  });

  it('gives more changes of one millisecond than first in one page, so that a client keeping only the highest updatedAt misses none of them', async () => {
    const accountId = someAccount();
    const orders = await Promise.all(Array.from({ length: 5 }, () => submitted(accountId)));
    const client = updatedAfterClient(accountId, 2);
    await expect.poll(async () => (await client.poll(), client.latest.size)).toBe(5);
    await changedInMilliseconds([orders.slice(0, 4).map((order) => order.id), [orders[4]!.id]]);
    await expect.poll(async () => (await client.poll(), stateOf(client.latest.values()))).toEqual(stateOf(await storedOrders(accountId)));
  });

  it('says of a page that is one whole millisecond that a next page holds changes only when one does', async () => {
    const accountId = someAccount();
    const orders = await Promise.all(Array.from({ length: 5 }, () => submitted(accountId)));
    // The fifth changes in a millisecond of its own, the other four in the next one.
    await changedInMilliseconds([[orders[4]!.id], orders.slice(0, 4).map((order) => order.id)]);
    const list = listSync(accountId, 2);
    // Once the four are settled (the sync hands out nothing newer than its settled stamp).
    let first = await list(null);
    await expect.poll(async () => (first = await list(null)).pageInfo.hasNextPage).toBe(true);
    expect(first.nodes.map((row) => row.id)).toEqual([orders[4]!.id]);
    const whole = await list(first.pageInfo.endCursor);
    expect(whole.nodes.map((row) => row.id).sort()).toEqual(orders.slice(0, 4).map((order) => order.id).sort());
    expect(whole.pageInfo.hasNextPage).toBe(false);
    await changedInMilliseconds([[orders[4]!.id]]);
    await expect.poll(async () => (await list(first.pageInfo.endCursor)).pageInfo.hasNextPage).toBe(true);
  });

  it('gives two clients, one keeping the highest updatedAt and one the cursor, 2 at a time, every final state during concurrent writes held open and stamped alike', async () => {
    const accountId = someAccount();
    const scope = testScope(withRandomDelays(8), accountId);
    const orders = await Promise.all(Array.from({ length: 10 }, () => submitted(accountId, limitOrder({ quantity: d('6') }))));
    const writer = async (worker: number) => {
      for (let step = 1; step <= 12; step += 1) {
        const target = orders[(worker * 3 + step) % orders.length]!;
        if (step % 5 === 0) await changedInOneMillisecond([target.id, orders[(worker + step + 1) % orders.length]!.id]);
        else if (step % 6 === 0) await cancelOrderSubmission(scope, receiveId(target.id));
        else if (step % 4 === 0) await submitOrder({ ...scope, lookupStrategy: strategies().lookup }, limitOrder({ quantity: d('6') }));
        else await applyFill(scope, fill(target.id, '1', `${10 + worker}.5`));
      }
    };
    const outOfOrder = async () => {
      const fresh = [await submitted(accountId), await submitted(accountId), await submitted(accountId)];
      await changedOutOfStampOrder(accountId, fresh);
    };
    const byStamp = updatedAfterClient(accountId, 2);
    const byCursor = cursorClient(listSync(accountId, 2));
    let writing = true;
    const readers = Promise.all(
      [byStamp, byCursor].map(async (client) => {
        while (writing) await client.poll();
      }),
    );
    try {
      await Promise.all([...Array.from({ length: 4 }, (_, worker) => writer(worker)), outOfOrder(), outOfOrder()]);
    } finally {
      writing = false;
      await readers;
    }
    const stored = stateOf(await storedOrders(accountId));
    await expect.poll(async () => (await byStamp.poll(), stateOf(byStamp.latest.values()))).toEqual(stored);
    await expect.poll(async () => (await byCursor.poll(), stateOf(byCursor.latest.values()))).toEqual(stored);
  });

  it('answers Strategy.orderSubmissions(UPDATED_AT_ASC) alike: an empty page keeps its place, and nothing committed out of stamp order is missed', async () => {
    const accountId = someAccount();
    const strategyId = newId();
    const ofStrategy = async () => {
      const result = await submitOrder({ ...testScope(db, accountId), lookupStrategy: async () => 'ACTIVE' }, limitOrder({ strategyId: receiveId(strategyId) }));
      if (!result.ok) throw new Error(result.error.message);
      return result.value;
    };
    // A loader per page: one per request.
    const list = (after: string | null) =>
      strategyOrdersLoaders(testScope(db, accountId))(strategyId, listRequest({ orderBy: 'UPDATED_AT_ASC', first: 2, after }, listCursorsOf(accountId)));
    const empty = await list(null);
    expect(empty.nodes).toEqual([]);
    expect(empty.pageInfo.endCursor).toEqual(expect.any(String));
    expect((await list(empty.pageInfo.endCursor)).pageInfo.endCursor).toEqual(expect.any(String));

    const client = cursorClient(list);
    await client.poll();
    const orders = [await ofStrategy(), await ofStrategy(), await ofStrategy()];
    await submitted(accountId);
    await changedOutOfStampOrder(accountId, orders);
    await changedInOneMillisecond([orders[0]!.id, orders[1]!.id]);
    const stored = stateOf((await storedOrders(accountId)).filter((row) => row.strategy_id === strategyId));
    await expect.poll(async () => (await client.poll(), stateOf(client.latest.values()))).toEqual(stored);
  });

  it('continues a cursor of the sync as it paged by commit order from a stamp before every change it had not given, never after one', async () => {
    const accountId = someAccount();
    const [a, b] = [await submitted(accountId), await submitted(accountId)];
    const former = new SealedFeedCursors(Buffer.from('the test secret, long enough to seal', 'utf8'), { feed: 'orders:UPDATED_AT_ASC', keyInfo: 'test' });
    // The client had every change up to a's submission in commit order, b's not.
    const cursor = former.forAccount(accountId).encode({ xid: a.commit_xid, id: a.id });
    await expect.poll(async () => (await listSync(accountId, 2)(cursor)).nodes.map((row) => row.id)).toContain(b.id);
    await cancelOrderSubmission(testScope(db, accountId), receiveId(a.id));
    const resumed = cursorClient(async (after) => listSync(accountId, 2)(after ?? cursor));
    await expect.poll(async () => (await resumed.poll(), stateOf(resumed.latest.values()))).toEqual(stateOf(await storedOrders(accountId)));
  });
});
