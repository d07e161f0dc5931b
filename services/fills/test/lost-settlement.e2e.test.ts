import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useStack } from '../../../testing/fixture.ts';
import { recorded, submitOrder } from './support.ts';

/**
 * A fill's settlement (PENDING → APPLIED, with its `fill.recorded` event) commits without waiting
 * for its flush to disk, because the recovery sweeper can redo it. This test undoes a settlement
 * after it was answered and relayed, as a Postgres crash right after that commit would, and checks
 * that the fill comes back exactly as it was: counted once by its order, listed once, reported once.
 */

const t = useStack({ env: { FILL_SWEEP_INTERVAL_MS: '100', FILL_SWEEP_MIN_AGE_MS: '500' }, accounts: ['alice'] });
let database: pg.Client;

beforeAll(async () => {
  database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
});

const outboxSize = async () => (await database.query('select count(*)::int as n from fills.outbox')).rows[0].n as number;
const fillEvents = async () => (await t.alice.listEvents({ filter: { types: ['fill.recorded'] }, first: 200 })).nodes;

describe('a settlement lost to a database crash', () => {
  it('is redone by the recovery sweeper: the fill is applied once, listed once and reported by one event', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const { fill, orderSubmission: answered } = await recorded(t.alice, { orderSubmissionId: order.id, executionId: 'exec-lost-settlement', quantity: '2', price: '30' });
    expect(answered).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '2', remainingQuantity: '3' });

    // The event has left the fills outbox for the events service before the "crash".
    await expect.poll(async () => (await fillEvents()).map((event) => event.data.id)).toEqual([fill.id]);
    const [reported] = await fillEvents();
    await expect.poll(outboxSize).toBe(0);

    // What the crash undoes: the settlement's commit, so the fill is pending again as its request first stored it.
    await database.query(`update fills.fills set status = 'PENDING', applied_at = null where id = $1`, [fill.id]);
    expect(await t.alice.fill(fill.id)).toBeNull();

    // The sweeper settles it again: orders answers that it counted this fill already.
    await expect.poll(async () => (await database.query('select status from fills.fills where id = $1', [fill.id])).rows[0].status).toBe('APPLIED');
    const after = await t.alice.orderWithFills(order.id);
    expect(after).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '2', remainingQuantity: '3', updatedAt: answered.updatedAt });
    expect(after?.fills.map((listed) => listed.id)).toEqual([fill.id]);
    expect(await t.alice.fill(fill.id)).toMatchObject({ id: fill.id, quantity: '2' });

    // The redone settlement wrote its event again, under the same id: the feed still holds the one reported.
    await expect.poll(outboxSize).toBe(0);
    expect(await fillEvents()).toEqual([reported]);
    expect(reported!.data).toMatchObject({ id: fill.id, quantity: '2', orderSubmission: { id: order.id, filledQuantity: '2' } });
  });
});
