import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import type { RecordFillInput } from '../../../testing/client.ts';
import { createStrategy, recorded, submitOrder } from './support/fixtures.ts';

const t = useStack({ env: NO_RATE_LIMIT_ENV });

const execution = () => `exec-${randomUUID()}`;

describe('recordFill', () => {
  it('records a fill with the defaults and moves the order to PARTIALLY_FILLED, then FILLED', async () => {
    const order = await submitOrder(t.alice, { symbol: 'acme', side: 'SELL', quantity: '3' });
    const before = Date.now();
    const first = await recorded(t.alice, { orderSubmissionId: order.id, executionId: execution(), quantity: '1', price: '1' });

    expect(first.fill).toMatchObject({ symbol: 'ACME', side: 'SELL', quantity: '1', price: '1', fee: '0', liquidity: 'UNKNOWN' });
    expect(first.fill.orderSubmission.id).toBe(order.id);
    // An omitted executedAt is the receipt time.
    expect(Date.parse(first.fill.executedAt)).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(first.fill.executedAt)).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(first.fill.executedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(first.orderSubmission).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '1', remainingQuantity: '2', averageFillPrice: '1' });

    const second = await recorded(t.alice, {
      orderSubmissionId: order.id,
      executionId: execution(),
      quantity: '2',
      price: '2',
      fee: '0.015',
      liquidity: 'MAKER',
      executedAt: '2026-01-05T10:00:00.123Z',
    });
    expect(second.fill).toMatchObject({ fee: '0.015', liquidity: 'MAKER', executedAt: '2026-01-05T10:00:00.123Z' });
    // (1 × 1 + 2 × 2) / 3 = 5/3, exact until the half-even rounding at 10 digits.
    expect(second.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '3', remainingQuantity: '0', averageFillPrice: '1.6666666667' });
  });

  it('makes the fill readable through fill, listFills and positions as soon as it has answered', async () => {
    const strategyId = await createStrategy(t.alice, `readable-${randomUUID()}`);
    const order = await submitOrder(t.alice, { symbol: 'INITECH', quantity: '4', strategyId });
    for (const [quantity, price] of [['1', '10'], ['3', '20']] as const) {
      const { fill } = await recorded(t.alice, { orderSubmissionId: order.id, executionId: execution(), quantity, price });
      // Read right after the answer, with no wait: every read shows the fill.
      const [single, listed, positions] = await Promise.all([
        t.alice.fill(fill.id),
        t.alice.listFills({ filter: { orderSubmissionId: order.id } }),
        t.alice.data('query ($id: ID!) { strategy(id: $id) { positions { symbol netQuantity averageCost } } }', { id: strategyId }),
      ]);
      expect(single).toMatchObject({ id: fill.id, quantity, price });
      expect(listed.nodes.map((node) => node.id)).toContain(fill.id);
      expect(positions.strategy.positions).toEqual([
        quantity === '1' ? { symbol: 'INITECH', netQuantity: '1', averageCost: '10' } : { symbol: 'INITECH', netQuantity: '4', averageCost: '17.5' },
      ]);
    }
  });

  it('fills the whole quantity at once: SUBMITTED to FILLED', async () => {
    const order = await submitOrder(t.alice, { quantity: '2.5' });
    const payload = await recorded(t.alice, { orderSubmissionId: order.id, executionId: execution(), quantity: '2.50', price: '100.25' });
    expect(payload.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '2.5', remainingQuantity: '0', averageFillPrice: '100.25' });
    expect(payload.fill.quantity).toBe('2.5');
  });

  it('refuses fills of FILLED and CANCELLED orders, and beyond the remaining quantity, recording nothing', async () => {
    const order = await submitOrder(t.alice, { quantity: '2' });
    await recorded(t.alice, { orderSubmissionId: order.id, executionId: execution(), quantity: '1.5', price: '10' });

    const tooMuch = await t.alice.recordFill({ orderSubmissionId: order.id, executionId: execution(), quantity: '0.5000000001', price: '10' });
    expect(tooMuch).toMatchObject({ fill: null, orderSubmission: null, error: { code: 'FILL_EXCEEDS_REMAINING', field: 'quantity' } });

    await recorded(t.alice, { orderSubmissionId: order.id, executionId: execution(), quantity: '0.5', price: '10' });
    const afterFilled = await t.alice.recordFill({ orderSubmissionId: order.id, executionId: execution(), quantity: '0.1', price: '10' });
    expect(afterFilled.error?.code).toBe('ORDER_NOT_FILLABLE');

    const cancelled = await submitOrder(t.alice, { quantity: '2' });
    const cancel = await t.alice.graphql(`mutation ($id: ID!) { cancelOrderSubmission(id: $id) { error { code } } }`, { id: cancelled.id });
    expect(cancel.body.data.cancelOrderSubmission.error).toBeNull();
    const afterCancel = await t.alice.recordFill({ orderSubmissionId: cancelled.id, executionId: execution(), quantity: '1', price: '10' });
    expect(afterCancel.error?.code).toBe('ORDER_NOT_FILLABLE');

    const state = await t.alice.orderWithFills(order.id);
    expect(state?.fills.map((fill) => fill.quantity)).toEqual(['1.5', '0.5']);
    expect((await t.alice.orderWithFills(cancelled.id))?.fills).toEqual([]);
  });

  it('answers NOT_FOUND for a missing, malformed or other account order', async () => {
    const bobsOrder = await submitOrder(t.bob);
    for (const orderSubmissionId of [randomUUID(), 'not-a-uuid', bobsOrder.id]) {
      const payload = await t.alice.recordFill({ orderSubmissionId, executionId: execution(), quantity: '1', price: '1' });
      expect(payload).toMatchObject({ fill: null, error: { code: 'NOT_FOUND', field: 'orderSubmissionId' } });
    }
    expect((await t.bob.orderWithFills(bobsOrder.id))?.filledQuantity).toBe('0');
  });

  it('validates the input with payload errors naming the field', async () => {
    const order = await submitOrder(t.alice);
    const cases: [Record<string, unknown>, string][] = [
      [{ quantity: '0' }, 'quantity'],
      [{ price: '0.0' }, 'price'],
      [{ executionId: '' }, 'executionId'],
      [{ executionId: 'x'.repeat(129) }, 'executionId'],
      [{ executedAt: new Date(Date.now() + 60_000).toISOString() }, 'executedAt'],
    ];
    for (const [override, field] of cases) {
      const payload = await t.alice.recordFill({ orderSubmissionId: order.id, executionId: execution(), quantity: '1', price: '1', ...override });
      expect(payload, JSON.stringify(override)).toMatchObject({ fill: null, error: { code: 'VALIDATION_FAILED', field } });
      expect(payload.error?.message.length).toBeGreaterThan(10);
    }
    // A venue clock a little ahead of ours is fine.
    const ahead = await recorded(t.alice, {
      orderSubmissionId: order.id,
      executionId: 'x'.repeat(128),
      quantity: '1',
      price: '1',
      executedAt: new Date(Date.now() + 2_000).toISOString(),
    });
    expect(ahead.fill.executionId).toHaveLength(128);
    expect((await t.alice.orderWithFills(order.id))?.filledQuantity).toBe('1');
  });

  it('refuses values their scalar does not accept with a top-level BAD_USER_INPUT', async () => {
    const order = await submitOrder(t.alice);
    const mutation = `mutation ($input: RecordFillInput!) { recordFill(input: $input) { error { code } } }`;
    for (const override of [{ quantity: 1 }, { price: '-1' }, { fee: '-0.5' }, { quantity: '1e3' }, { executedAt: 'yesterday' }]) {
      const error = await t.alice.topLevelError(mutation, {
        input: { orderSubmissionId: order.id, executionId: execution(), quantity: '1', price: '1', ...override },
      });
      expect(error.extensions.code, JSON.stringify(override)).toBe('BAD_USER_INPUT');
    }
    expect((await t.alice.orderWithFills(order.id))?.filledQuantity).toBe('0');
  });
});

describe('recordFill idempotency', () => {
  it('returns the recorded fill for a retry and applies it once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input: RecordFillInput = { orderSubmissionId: order.id, executionId: execution(), quantity: '2', price: '50.5', fee: '0.1', liquidity: 'TAKER' };
    const first = await recorded(t.alice, { ...input, executedAt: '2026-02-01T09:30:00.000Z' });

    const sameSpelledDifferently = await recorded(t.alice, { ...input, quantity: '2.000', price: '50.50', executedAt: '2026-02-01T09:30:00Z' });
    const withoutExecutedAt = await recorded(t.alice, input);
    for (const retry of [sameSpelledDifferently, withoutExecutedAt]) {
      expect(retry.fill).toEqual(first.fill);
      expect(retry.orderSubmission).toMatchObject({ filledQuantity: '2', remainingQuantity: '3', status: 'PARTIALLY_FILLED' });
    }
    expect((await t.alice.orderWithFills(order.id))?.fills.map((fill) => fill.id)).toEqual([first.fill.id]);
  });

  it('answers DUPLICATE_EXECUTION_ID when a detail differs, and changes nothing', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const other = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: execution(), quantity: '1', price: '10', executedAt: '2026-02-01T09:30:00.000Z' };
    await recorded(t.alice, input);
    for (const override of [
      { quantity: '1.5' },
      { price: '10.01' },
      { fee: '0.01' },
      { liquidity: 'MAKER' },
      { executedAt: '2026-02-01T09:30:00.001Z' },
      { orderSubmissionId: other.id },
    ] satisfies Partial<RecordFillInput>[]) {
      const payload = await t.alice.recordFill({ ...input, ...override });
      expect(payload, JSON.stringify(override)).toMatchObject({ fill: null, error: { code: 'DUPLICATE_EXECUTION_ID', field: 'executionId' } });
    }
    expect((await t.alice.orderWithFills(order.id))?.filledQuantity).toBe('1');
    expect((await t.alice.orderWithFills(other.id))?.filledQuantity).toBe('0');
  });

  it('keeps execution ids per account', async () => {
    const executionId = execution();
    const alicesOrder = await submitOrder(t.alice);
    const bobsOrder = await submitOrder(t.bob);
    const alicesFill = await recorded(t.alice, { orderSubmissionId: alicesOrder.id, executionId, quantity: '1', price: '1' });
    const bobsFill = await recorded(t.bob, { orderSubmissionId: bobsOrder.id, executionId, quantity: '2', price: '2' });
    expect(bobsFill.fill.id).not.toBe(alicesFill.fill.id);
    expect(await t.bob.fill(alicesFill.fill.id)).toBeNull();
  });

  it('lets a refused execution id be used again: a refusal records nothing', async () => {
    const order = await submitOrder(t.alice, { quantity: '1' });
    const executionId = execution();
    const refused = await t.alice.recordFill({ orderSubmissionId: order.id, executionId, quantity: '2', price: '1' });
    expect(refused.error?.code).toBe('FILL_EXCEEDS_REMAINING');
    const corrected = await recorded(t.alice, { orderSubmissionId: order.id, executionId, quantity: '1', price: '1' });
    expect(corrected.orderSubmission.status).toBe('FILLED');
  });
});

describe('recordFill under concurrency', () => {
  it('applies exactly five of twelve concurrent fills of 1 on an order of 5', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const payloads = await Promise.all(
      Array.from({ length: 12 }, () => t.alice.recordFill({ orderSubmissionId: order.id, executionId: execution(), quantity: '1', price: '7' })),
    );
    const applied = payloads.filter((payload) => payload.error === null);
    expect(applied).toHaveLength(5);
    for (const payload of payloads.filter((p) => p.error !== null)) {
      expect(['FILL_EXCEEDS_REMAINING', 'ORDER_NOT_FILLABLE']).toContain(payload.error?.code);
    }
    const state = await t.alice.orderWithFills(order.id);
    expect(state).toMatchObject({ status: 'FILLED', filledQuantity: '5', remainingQuantity: '0', averageFillPrice: '7' });
    expect(state?.fills.map((fill) => fill.id).sort()).toEqual(applied.map((payload) => payload.fill!.id).sort());
    const listed = await t.alice.listFills({ filter: { orderSubmissionId: order.id } });
    expect(listed.nodes).toHaveLength(5);
  });

  it('records one fill when the same execution is sent twelve times at once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: execution(), quantity: '1', price: '7' };
    const payloads = await Promise.all(Array.from({ length: 12 }, () => t.alice.recordFill(input)));
    expect(payloads.map((payload) => payload.error)).toEqual(Array(12).fill(null));
    expect(new Set(payloads.map((payload) => payload.fill?.id)).size).toBe(1);
    const state = await t.alice.orderWithFills(order.id);
    expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '1' });
    expect(state?.fills).toHaveLength(1);
  });
});
