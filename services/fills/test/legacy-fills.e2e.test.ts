import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { eventually, recorded, submitOrder } from './support/fixtures.ts';

/**
 * A deployment upgraded across orders' migration 005: the fills orders applied before it are kept
 * whole here, but orders' applications of them lack the execution id (and fee, liquidity, execution
 * time). Sending such a fill again (a back-office re-import) must answer the fill kept, applying
 * nothing twice, before and after fills has brought the execution ids back to orders.
 */

const t = useStack({ env: NO_RATE_LIMIT_ENV, accounts: ['alice'] });
let database: pg.Client;

beforeAll(async () => {
  database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();
});

afterAll(async () => {
  await database?.end();
});

/** Makes a fill's application in orders as a release before migration 005 left it. */
async function asRecordedBeforeUpgrade(fillId: string): Promise<void> {
  const updated = await database.query(
    'update orders.fill_applications set execution_id = null, fee = null, liquidity = null, executed_at = null where fill_id = $1',
    [fillId],
  );
  expect(updated.rowCount).toBe(1);
}

async function application(fillId: string) {
  const result = await database.query('select execution_id, fee::text, liquidity, executed_at from orders.fill_applications where fill_id = $1', [fillId]);
  return result.rows[0] as { execution_id: string | null; fee: string | null; liquidity: string | null; executed_at: Date | null };
}

describe('a fill recorded before orders kept execution ids', () => {
  it('sent again is answered with the fill kept and applied once; other terms are DUPLICATE_EXECUTION_ID; a new fill of the account is still applied', async () => {
    const order = await submitOrder(t.alice, { quantity: '10' });
    const input = {
      orderSubmissionId: order.id,
      executionId: `exec-${randomUUID()}`,
      quantity: '4',
      price: '12.5',
      fee: '0.25',
      liquidity: 'MAKER' as const,
      executedAt: new Date(Date.now() - 60_000).toISOString(),
    };
    const first = await recorded(t.alice, input);
    await asRecordedBeforeUpgrade(first.fill.id);

    const again = await recorded(t.alice, { ...input, price: '12.50' });
    expect(again.fill.id).toBe(first.fill.id);
    expect(again.orderSubmission).toMatchObject({ filledQuantity: '4', remainingQuantity: '6' });
    expect((await t.alice.fill(first.fill.id))?.id).toBe(first.fill.id);

    const changed = await t.alice.recordFill({ ...input, quantity: '5' });
    expect(changed).toMatchObject({ fill: null, error: { code: 'DUPLICATE_EXECUTION_ID', field: 'executionId' } });
    const elsewhere = await t.alice.recordFill({ ...input, orderSubmissionId: (await submitOrder(t.alice)).id });
    expect(elsewhere.error?.code).toBe('DUPLICATE_EXECUTION_ID');

    const next = await recorded(t.alice, { ...input, executionId: `exec-${randomUUID()}`, quantity: '1' });
    expect(next.orderSubmission).toMatchObject({ filledQuantity: '5' });
    const filled = await t.alice.orderWithFills(order.id);
    expect(filled).toMatchObject({ filledQuantity: '5' });
    expect(filled?.fills.map((fill) => fill.id).sort()).toEqual([first.fill.id, next.fill.id].sort());
  });

  it("fills brings the execution ids back to orders when it starts, after which a retry is recognised in orders' one statement", async () => {
    const order = await submitOrder(t.alice, { quantity: '10' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '3', price: '7', fee: '0.1', liquidity: 'TAKER' as const };
    const first = await recorded(t.alice, input);
    await asRecordedBeforeUpgrade(first.fill.id);

    await t.stack.stopService('fills');
    await t.stack.startService('fills');
    await eventually(async () => {
      expect(await application(first.fill.id)).toEqual({
        execution_id: input.executionId,
        fee: '0.1000000000',
        liquidity: 'TAKER',
        executed_at: new Date(first.fill.executedAt),
      });
    });
    const again = await recorded(t.alice, input);
    expect(again.fill.id).toBe(first.fill.id);
    expect(again.orderSubmission).toMatchObject({ filledQuantity: '3' });
  });
});
