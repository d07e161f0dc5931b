import { describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';

/** replaceOrderSubmission and cancelOrderSubmissions through the gateway, as a client sends them. */

const t = useStack({ redis: 'none', env: NO_RATE_LIMIT_ENV });

describe('replaceOrderSubmission', () => {
  it('replaces an open order: the new one inherits symbol, side, type and strategy, both link to each other', async () => {
    const old = await t.alice.submittedOrder({ type: 'LIMIT', quantity: '10', limitPrice: '187.25', clientOrderId: 'rp-old' });
    const payload = await t.alice.replaceOrder(old.id, { quantity: '6', limitPrice: '186.5', clientOrderId: 'rp-new' });
    expect(payload.error).toBeNull();
    const next = payload.orderSubmission!;
    expect(next).toMatchObject({
      clientOrderId: 'rp-new',
      symbol: 'AAPL',
      side: 'BUY',
      type: 'LIMIT',
      timeInForce: 'DAY',
      quantity: '6',
      limitPrice: '186.5',
      status: 'SUBMITTED',
      replacedAt: null,
      replacedBy: null,
      replacesOrderSubmission: { id: old.id, clientOrderId: 'rp-old' },
    });
    expect(next.id).not.toBe(old.id);
    expect(payload.replacedOrderSubmission).toMatchObject({ id: old.id, status: 'REPLACED', remainingQuantity: '0', replacedBy: { id: next.id } });
    expect(payload.replacedOrderSubmission!.replacedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const replacedOnly = await t.alice.listOrders({ filter: { status: ['REPLACED'] } });
    expect(replacedOnly.nodes.map((order) => order.id)).toContain(old.id);
    expect(replacedOnly.nodes.every((order) => order.status === 'REPLACED')).toBe(true);
  });

  it('is idempotent by clientOrderId: the same replace again returns the same new order; other details are DUPLICATE_CLIENT_ORDER_ID', async () => {
    const old = await t.alice.submittedOrder({ quantity: '10' });
    const first = await t.alice.replaceOrder(old.id, { quantity: '3', clientOrderId: `rp-${old.id.slice(0, 8)}` });
    const again = await t.alice.replaceOrder(old.id, { quantity: '3.0', clientOrderId: `rp-${old.id.slice(0, 8)}` });
    expect(again.error).toBeNull();
    expect(again.orderSubmission!.id).toBe(first.orderSubmission!.id);
    const other = await t.alice.replaceOrder(old.id, { quantity: '4', clientOrderId: `rp-${old.id.slice(0, 8)}` });
    expect(other).toMatchObject({ orderSubmission: null, replacedOrderSubmission: null, error: { code: 'DUPLICATE_CLIENT_ORDER_ID', field: 'clientOrderId' } });
  });

  it("applies submitOrder's rules (VALIDATION_FAILED with field) and refuses an order that is not open (ORDER_NOT_REPLACEABLE)", async () => {
    const old = await t.alice.submittedOrder({ quantity: '10' });
    expect((await t.alice.replaceOrder(old.id, { quantity: '0' })).error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'quantity' });
    expect((await t.alice.replaceOrder(old.id, { limitPrice: '5' })).error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'limitPrice' });
    await t.alice.replaceOrder(old.id, {});
    expect((await t.alice.replaceOrder(old.id, {})).error).toMatchObject({ code: 'ORDER_NOT_REPLACEABLE', field: 'id' });
    // A Decimal its scalar refuses is a top-level error, as in submitOrder.
    const response = await t.alice.graphql('mutation ($id: ID!) { replaceOrderSubmission(id: $id, input: { quantity: 5 }) { error { code } } }', {
      id: old.id,
    });
    expect((response.body as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('BAD_USER_INPUT');
  });

  it("answers another account's order exactly as a missing one: NOT_FOUND, and nothing changes", async () => {
    const alices = await t.alice.submittedOrder({ quantity: '10' });
    const foreign = await t.bob.replaceOrder(alices.id, { quantity: '1' });
    const missing = await t.bob.replaceOrder(newId(), { quantity: '1' });
    expect(foreign.error).toMatchObject({ code: 'NOT_FOUND', field: 'id' });
    expect(foreign.error!.message.replace(alices.id, 'ID')).toBe(missing.error!.message.replace(/"[0-9a-f-]{36}"/, '"ID"'));
    const after = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { status replacedBy { id } } }', { id: alices.id });
    expect(after.orderSubmission).toEqual({ status: 'SUBMITTED', replacedBy: null });
  });
});

describe('cancelOrderSubmissions', () => {
  it("cancels the caller's matching open orders, oldest first, and never another account's", async () => {
    const carol = await t.newAccount('Carol');
    const first = await carol.submittedOrder({ symbol: 'tsla' });
    const second = await carol.submittedOrder({ symbol: 'TSLA', side: 'SELL' });
    const other = await carol.submittedOrder({ symbol: 'NVDA' });
    const bobs = await t.bob.submittedOrder({ symbol: 'TSLA' });

    const bySymbol = await carol.cancelOrders({ symbol: 'tsla' });
    expect(bySymbol).toMatchObject({ cancelledCount: 2, hasMore: false, error: null });
    expect(bySymbol.orderSubmissions.map((order) => [order.id, order.status])).toEqual([
      [first.id, 'CANCELLED'],
      [second.id, 'CANCELLED'],
    ]);
    const everything = await carol.cancelOrders();
    expect(everything.orderSubmissions.map((order) => order.id)).toEqual([other.id]);
    expect((await carol.cancelOrders()).cancelledCount).toBe(0);
    const bobsOrder = await t.bob.data('query ($id: ID!) { orderSubmission(id: $id) { status } }', { id: bobs.id });
    expect(bobsOrder.orderSubmission.status).toBe('SUBMITTED');
  });

  it('a symbol that upper-casing would spell as another (ﬁ as FI, ıBM as IBM) cancels nothing', async () => {
    const erin = await t.newAccount('Erin');
    const fi = await erin.submittedOrder({ symbol: 'FI' });
    const ibm = await erin.submittedOrder({ symbol: 'IBM' });
    for (const symbol of ['ﬁ', 'ıBM']) expect(await erin.cancelOrders({ symbol }), symbol).toMatchObject({ cancelledCount: 0, orderSubmissions: [], hasMore: false });
    const listed = await erin.data('{ listOrderSubmissions(filter: {symbol: "ﬁ"}) { nodes { id } } }');
    expect(listed.listOrderSubmissions.nodes).toEqual([]);
    for (const order of [fi, ibm]) expect((await erin.data('query ($id: ID!) { orderSubmission(id: $id) { status } }', { id: order.id })).orderSubmission.status).toBe('SUBMITTED');
  });

  it("another account's strategy id matches none of the caller's orders", async () => {
    const dave = await t.newAccount('Dave');
    await dave.submittedOrder();
    expect(await dave.cancelOrders({ strategyId: newId() })).toMatchObject({ cancelledCount: 0, orderSubmissions: [], hasMore: false });
  });
});
