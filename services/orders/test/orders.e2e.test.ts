import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import type { ApiClient, Order, OrderPage, OrderSubmissionFilter, SubmitOrderInput } from '../../../testing/client.ts';
import { applyFill, callOrdersSubgraph } from './support/apply-fill.ts';

const t = useStack({ redis: 'none', env: NO_RATE_LIMIT_ENV });

const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A fresh client, for tests that count or list everything an account has. */
const freshClient = () => t.newAccount();

async function orderCount(client: ApiClient): Promise<number> {
  return (await client.listAllOrders()).length;
}

describe('submitOrder', () => {
  it('records a limit order: symbol upper-cased, DAY by default, canonical decimals, SUBMITTED', async () => {
    const payload = await t.alice.submitOrder({
      clientOrderId: 'first-order',
      symbol: 'aapl',
      side: 'BUY',
      type: 'LIMIT',
      quantity: '10.500',
      limitPrice: '187.250',
    });
    expect(payload.error).toBeNull();
    const order = payload.orderSubmission!;
    expect(order).toMatchObject({
      clientOrderId: 'first-order',
      strategy: null,
      symbol: 'AAPL',
      side: 'BUY',
      type: 'LIMIT',
      timeInForce: 'DAY',
      quantity: '10.5',
      limitPrice: '187.25',
      stopPrice: null,
      status: 'SUBMITTED',
      filledQuantity: '0',
      remainingQuantity: '10.5',
      averageFillPrice: null,
      cancelledAt: null,
    });
    expect(order.submittedAt).toMatch(ISO_MILLIS);
    expect(order.updatedAt).toBe(order.submittedAt);
    expect(Math.abs(Date.parse(order.submittedAt) - Date.now())).toBeLessThan(10_000);
  });

  it('records every type with the prices it needs and any time in force', async () => {
    const stop = await t.alice.submittedOrder({ type: 'STOP', stopPrice: '90', timeInForce: 'GTC', side: 'SELL' });
    expect(stop).toMatchObject({ type: 'STOP', stopPrice: '90', limitPrice: null, timeInForce: 'GTC', side: 'SELL' });
    const stopLimit = await t.alice.submittedOrder({ type: 'STOP_LIMIT', stopPrice: '90.5', limitPrice: '90', timeInForce: 'FOK' });
    expect(stopLimit).toMatchObject({ type: 'STOP_LIMIT', stopPrice: '90.5', limitPrice: '90', timeInForce: 'FOK' });
    const market = await t.alice.submittedOrder({ type: 'MARKET', timeInForce: 'IOC', quantity: '0.0000000001' });
    expect(market).toMatchObject({ type: 'MARKET', timeInForce: 'IOC', quantity: '0.0000000001' });
    const largest = await t.alice.submittedOrder({ quantity: '99999999999999999999.9999999999' });
    expect(largest.quantity).toBe('99999999999999999999.9999999999');
  });

  it.each<[string, Partial<SubmitOrderInput>, string]>([
    ['a zero quantity', { quantity: '0' }, 'quantity'],
    ['a zero quantity with trailing zeros', { quantity: '0.000' }, 'quantity'],
    ['an empty symbol', { symbol: '' }, 'symbol'],
    ['a symbol of 17 characters', { symbol: 'ABCDEFGHIJKLMNOPQ' }, 'symbol'],
    ['a symbol with a space', { symbol: 'AA PL' }, 'symbol'],
    ['a symbol with an underscore', { symbol: 'AA_PL' }, 'symbol'],
    ['a symbol that upper-cases into A-Z', { symbol: 'straße' }, 'symbol'],
    ['a limit price on a MARKET order', { limitPrice: '10' }, 'limitPrice'],
    ['a stop price on a MARKET order', { stopPrice: '10' }, 'stopPrice'],
    ['a LIMIT order without a limit price', { type: 'LIMIT' }, 'limitPrice'],
    ['a LIMIT order with a stop price', { type: 'LIMIT', limitPrice: '10', stopPrice: '9' }, 'stopPrice'],
    ['a LIMIT order with a zero limit price', { type: 'LIMIT', limitPrice: '0' }, 'limitPrice'],
    ['a STOP order without a stop price', { type: 'STOP' }, 'stopPrice'],
    ['a STOP order with a limit price', { type: 'STOP', stopPrice: '9', limitPrice: '10' }, 'limitPrice'],
    ['a STOP order with a zero stop price', { type: 'STOP', stopPrice: '0' }, 'stopPrice'],
    ['a STOP_LIMIT order without a limit price', { type: 'STOP_LIMIT', stopPrice: '9' }, 'limitPrice'],
    ['a STOP_LIMIT order without a stop price', { type: 'STOP_LIMIT', limitPrice: '9' }, 'stopPrice'],
    ['an empty clientOrderId', { clientOrderId: '' }, 'clientOrderId'],
    ['a clientOrderId of 65 characters', { clientOrderId: 'x'.repeat(65) }, 'clientOrderId'],
    ['a clientOrderId with a slash', { clientOrderId: 'a/b' }, 'clientOrderId'],
  ])('refuses %s with VALIDATION_FAILED on the field, creating nothing', async (_case, change, field) => {
    const client = await freshClient();
    const payload = await client.submitOrder({ symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '1', ...change });
    expect(payload.orderSubmission).toBeNull();
    expect(payload.error).toMatchObject({ code: 'VALIDATION_FAILED', field });
    expect(payload.error!.message.length).toBeGreaterThan(10);
    expect(await orderCount(client)).toBe(0);
  });

  it('accepts the edges of the rules: 16-character symbols of every allowed character, 64-character clientOrderIds', async () => {
    const order = await t.alice.submittedOrder({ symbol: 'a.b/c-0123456789', clientOrderId: `${'a'.repeat(60)}.:_-` });
    expect(order.symbol).toBe('A.B/C-0123456789');
    expect(order.clientOrderId).toBe(`${'a'.repeat(60)}.:_-`);
  });

  it.each<[string, unknown]>([
    ['a JSON number', 10],
    ['a negative decimal', '-1'],
    ['an exponent', '1e5'],
    ['text', 'ten'],
    ['11 fraction digits', '1.00000000001'],
    ['21 integer digits', '100000000000000000000'],
  ])('refuses a quantity given as %s with a top-level BAD_USER_INPUT, creating nothing', async (_case, quantity) => {
    const client = await freshClient();
    const result = await client.graphql(`mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } error { code } } }`,
      { input: { symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity } },
    );
    expect(result.body.data ?? null).toBeNull();
    expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(await orderCount(client)).toBe(0);
  });

  it('refuses a Decimal literal written as a number with BAD_USER_INPUT', async () => {
    const error = await t.alice.topLevelError('mutation { submitOrder(input: { symbol: "AAPL", side: BUY, type: MARKET, quantity: 10 }) { orderSubmission { id } } }',
    );
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
  });

  it('answers a retry with the same fields with the stored order and no error', async () => {
    const input: SubmitOrderInput = { clientOrderId: 'retry-me', symbol: 'msft', side: 'SELL', type: 'LIMIT', quantity: '5.0', limitPrice: '300.10' };
    const first = await t.alice.submitOrder(input);
    const retry = await t.alice.submitOrder({ ...input, symbol: 'MSFT', quantity: '5', limitPrice: '300.1', timeInForce: 'DAY' });
    expect(retry.error).toBeNull();
    expect(retry.orderSubmission).toEqual(first.orderSubmission);
  });

  it('refuses a reused clientOrderId with different fields with DUPLICATE_CLIENT_ORDER_ID, creating nothing', async () => {
    const client = await freshClient();
    await client.submittedOrder({ clientOrderId: 'once' });
    const payload = await client.submitOrder({ symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '2', clientOrderId: 'once' });
    expect(payload.orderSubmission).toBeNull();
    expect(payload.error).toMatchObject({ code: 'DUPLICATE_CLIENT_ORDER_ID', field: 'clientOrderId' });
    expect(await orderCount(client)).toBe(1);
  });

  it('keeps clientOrderIds per account: another account may use the same one', async () => {
    const mine = await t.alice.submittedOrder({ clientOrderId: 'shared-name' });
    const theirs = await t.bob.submittedOrder({ clientOrderId: 'shared-name', quantity: '7' });
    expect(theirs.id).not.toBe(mine.id);
  });

  it('creates exactly one order from 25 concurrent identical submissions, and answers each with it', async () => {
    const client = await freshClient();
    const input: SubmitOrderInput = { clientOrderId: 'burst', symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: '1', limitPrice: '10' };
    const payloads = await Promise.all(Array.from({ length: 25 }, () => client.submitOrder(input)));
    expect(payloads.every((payload) => payload.error === null)).toBe(true);
    expect(new Set(payloads.map((payload) => payload.orderSubmission!.id)).size).toBe(1);
    expect(await orderCount(client)).toBe(1);
  });

  it('never deduplicates orders without a clientOrderId', async () => {
    const client = await freshClient();
    await Promise.all(Array.from({ length: 3 }, () => client.submittedOrder()));
    expect(await orderCount(client)).toBe(3);
  });
});

describe('cancelOrderSubmission', () => {
  it('cancels a SUBMITTED order with cancelledAt; cancelling it again returns it with no error', async () => {
    const order = await t.alice.submittedOrder({ quantity: '3' });
    const payload = await t.alice.cancelOrder(order.id);
    expect(payload.error).toBeNull();
    const cancelled = payload.orderSubmission!;
    expect(cancelled).toMatchObject({ id: order.id, status: 'CANCELLED', remainingQuantity: '0', filledQuantity: '0' });
    expect(cancelled.cancelledAt).toMatch(ISO_MILLIS);
    expect(cancelled.updatedAt).toBe(cancelled.cancelledAt);
    expect(Date.parse(cancelled.updatedAt)).toBeGreaterThan(Date.parse(order.updatedAt));
    const again = await t.alice.cancelOrder(order.id);
    expect(again).toEqual({ orderSubmission: cancelled, error: null });
  });

  it('cancels a PARTIALLY_FILLED order, keeping its fills', async () => {
    const order = await t.alice.submittedOrder({ quantity: '10' });
    await applyFill(t.alice, { executionId: newId(), orderSubmissionId: order.id, quantity: '4', price: '100.5' });
    const payload = await t.alice.cancelOrder(order.id);
    expect(payload.orderSubmission).toMatchObject({
      status: 'CANCELLED',
      filledQuantity: '4',
      remainingQuantity: '0',
      averageFillPrice: '100.5',
    });
  });

  it('refuses a FILLED order with ORDER_NOT_CANCELLABLE and leaves it FILLED', async () => {
    const order = await t.alice.submittedOrder({ quantity: '2' });
    await applyFill(t.alice, { executionId: newId(), orderSubmissionId: order.id, quantity: '2', price: '10' });
    const payload = await t.alice.cancelOrder(order.id);
    expect(payload.orderSubmission).toBeNull();
    expect(payload.error).toMatchObject({ code: 'ORDER_NOT_CANCELLABLE', field: 'id' });
    const { orderSubmission } = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { status } }', { id: order.id });
    expect(orderSubmission.status).toBe('FILLED');
  });

  it('answers another account\'s order exactly as a missing one: NOT_FOUND, and the order is untouched', async () => {
    const order = await t.alice.submittedOrder();
    const missing = newId();
    const foreign = await t.bob.cancelOrder(order.id);
    const absent = await t.bob.cancelOrder(missing);
    expect(foreign.orderSubmission).toBeNull();
    expect(foreign.error).toMatchObject({ code: 'NOT_FOUND', field: 'id' });
    expect({ ...foreign.error, message: foreign.error!.message.replace(order.id, '<id>') }).toEqual({
      ...absent.error,
      message: absent.error!.message.replace(missing, '<id>'),
    });
    const notAnId = await t.bob.cancelOrder('order-1');
    expect(notAnId.error?.code).toBe('NOT_FOUND');
    const { orderSubmission } = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { status } }', { id: order.id });
    expect(orderSubmission.status).toBe('SUBMITTED');
  });
});

describe('orderSubmission', () => {
  it('returns the caller\'s order, and null for another account\'s, a missing or a malformed id', async () => {
    const order = await t.alice.submittedOrder({ clientOrderId: 'lookup-1' });
    expect(await t.alice.order(order.id)).toEqual(order);
    expect(await t.alice.order(order.id.toUpperCase())).toEqual(order);
    expect(await t.bob.order(order.id)).toBeNull();
    expect(await t.alice.order(newId())).toBeNull();
    expect(await t.alice.order('not-a-uuid')).toBeNull();
  });
});

describe('listOrderSubmissions', () => {
  let client: ApiClient;
  let orders: Order[];

  beforeAll(async () => {
    client = await freshClient();
    orders = [];
    const inputs: Partial<SubmitOrderInput>[] = [
      { symbol: 'AAPL', side: 'BUY', clientOrderId: 'l-0' },
      { symbol: 'MSFT', side: 'SELL', clientOrderId: 'l-1' },
      { symbol: 'AAPL', side: 'SELL', clientOrderId: 'l-2' },
      { symbol: 'BTC/USD', side: 'BUY', clientOrderId: 'l-3' },
      { symbol: 'AAPL', side: 'BUY', clientOrderId: 'l-4' },
    ];
    for (const input of inputs) orders.push(await client.submittedOrder(input));
    await client.cancelOrder(orders[1]!.id);
    await applyFill(client, { executionId: newId(), orderSubmissionId: orders[2]!.id, quantity: '0.5', price: '1' });
    await applyFill(client, { executionId: newId(), orderSubmissionId: orders[3]!.id, quantity: '1', price: '1' });
    // Another account's orders must never appear.
    await t.bob.submittedOrder({ symbol: 'AAPL', clientOrderId: 'l-0' });
  });

  const ids = (page: { nodes: Order[] }) => page.nodes.map((order) => order.clientOrderId);

  it('lists the account\'s orders newest first, with edges, cursors and pageInfo', async () => {
    const { listOrderSubmissions: page } = await client.data('{ listOrderSubmissions(first: 10) { nodes { id clientOrderId } edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }',
    );
    expect(ids(page)).toEqual(['l-4', 'l-3', 'l-2', 'l-1', 'l-0']);
    expect(page.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(page.nodes.map((order: Order) => order.id));
    expect(page.pageInfo).toEqual({ hasNextPage: false, endCursor: page.edges[4].cursor });
  });

  it.each<[string, OrderSubmissionFilter, string[]]>([
    ['status', { status: ['CANCELLED', 'FILLED'] }, ['l-3', 'l-1']],
    ['status PARTIALLY_FILLED', { status: ['PARTIALLY_FILLED'] }, ['l-2']],
    ['an empty status list', { status: [] }, []],
    ['symbol, compared upper-cased', { symbol: 'aapl' }, ['l-4', 'l-2', 'l-0']],
    ['a symbol with a slash', { symbol: 'btc/usd' }, ['l-3']],
    ['side', { side: 'SELL' }, ['l-2', 'l-1']],
    ['clientOrderId', { clientOrderId: 'l-2' }, ['l-2']],
    ['a strategyId without orders', { strategyId: newId() }, []],
    ['a strategyId that is not a UUID', { strategyId: 'nope' }, []],
    ['several filters at once (AND)', { symbol: 'AAPL', side: 'BUY', status: ['SUBMITTED'] }, ['l-4', 'l-0']],
  ])('filters by %s', async (_case, filter, expected) => {
    expect(ids(await client.listOrders({ filter }))).toEqual(expected);
  });

  it('filters by submission and update time, strictly after and before', async () => {
    const [o0, , o2] = orders as [Order, Order, Order];
    expect(ids(await client.listOrders({ filter: { submittedAfter: o2.submittedAt } }))).toEqual(['l-4', 'l-3']);
    expect(ids(await client.listOrders({ filter: { submittedBefore: o2.submittedAt } }))).toEqual(['l-1', 'l-0']);
    expect(ids(await client.listOrders({ filter: { submittedAfter: o0.submittedAt, submittedBefore: o2.submittedAt } }))).toEqual(['l-1']);
    // A bound finer than a millisecond (Python's isoformat writes microseconds): order 2 is strictly
    // before 0.5 ms past its own time, and not strictly after it.
    const halfPast = (at: string) => at.replace('Z', '500Z');
    expect(ids(await client.listOrders({ filter: { submittedBefore: halfPast(o2.submittedAt) } }))).toEqual(['l-2', 'l-1', 'l-0']);
    expect(ids(await client.listOrders({ filter: { submittedAfter: halfPast(o2.submittedAt) } }))).toEqual(['l-4', 'l-3']);
    // Orders 1, 2 and 3 changed after order 4 was submitted.
    const lastSubmitted = orders[4]!.submittedAt;
    expect(ids(await client.listOrders({ filter: { updatedAfter: lastSubmitted } })).sort()).toEqual(['l-1', 'l-2', 'l-3']);
  });

  it('orders by last change for UPDATED_AT_ASC (by updatedAt, once no older write of orders is in flight)', async () => {
    await expect.poll(async () => ids(await client.listOrders({ orderBy: 'UPDATED_AT_ASC' })), { timeout: 10_000 }).toEqual([
      'l-0',
      'l-4',
      'l-1',
      'l-2',
      'l-3',
    ]);
  });

  it('pages with opaque cursors, in both orderings', async () => {
    await expect.poll(async () => (await client.listOrders({ orderBy: 'UPDATED_AT_ASC' })).nodes.length, { timeout: 10_000 }).toBe(5);
    for (const [orderBy, expected] of [
      ['SUBMITTED_AT_DESC', ['l-4', 'l-3', 'l-2', 'l-1', 'l-0']],
      ['UPDATED_AT_ASC', ['l-0', 'l-4', 'l-1', 'l-2', 'l-3']],
    ] as const) {
      const seen: (string | null)[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const page: OrderPage = await client.listOrders({ orderBy, first: 2, after });
        seen.push(...ids(page));
        pages += 1;
        after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
      } while (after);
      expect(seen).toEqual(expected);
      expect(pages).toBe(3);
    }
  });

  it('neither skips nor repeats a row when orders are submitted and changed while a client pages', async () => {
    const pager = await freshClient();
    for (let i = 0; i < 6; i += 1) await pager.submittedOrder({ clientOrderId: `p-${i}` });
    const first = await pager.listOrders({ first: 3 });
    await pager.submittedOrder({ clientOrderId: 'p-new' });
    await pager.cancelOrder(first.nodes[0]!.id);
    const second = await pager.listOrders({ first: 3, after: first.pageInfo.endCursor });
    expect([...ids(first), ...ids(second)]).toEqual(['p-5', 'p-4', 'p-3', 'p-2', 'p-1', 'p-0']);
    expect(second.pageInfo.hasNextPage).toBe(false);
  });

  it('is an incremental sync with UPDATED_AT_ASC: paging on from the last endCursor gives every change since, by updatedAt', async () => {
    const syncer = await freshClient();
    const a = await syncer.submittedOrder({ quantity: '5' });
    const b = await syncer.submittedOrder({ quantity: '5' });
    let cursor: string | null = null;
    /** Pages from the cursor to the end, keeping the last endCursor (an empty page has none). */
    const sync = async () => {
      const changes: Order[] = [];
      let page: OrderPage;
      do {
        page = await syncer.listOrders({ orderBy: 'UPDATED_AT_ASC', first: 200, after: cursor });
        changes.push(...page.nodes);
        cursor = page.pageInfo.endCursor ?? cursor;
      } while (page.pageInfo.hasNextPage);
      return changes.map((order) => [order.id, order.status]);
    };
    // A change is handed out once every write that began before it has ended, anywhere on the server.
    const until = async (expected: string[][]) => {
      const seen: string[][] = [];
      await expect.poll(async () => (seen.push(...(await sync())), seen), { timeout: 10_000 }).toEqual(expected);
    };
    await until([
      [a.id, 'SUBMITTED'],
      [b.id, 'SUBMITTED'],
    ]);

    await applyFill(syncer, { executionId: newId(), orderSubmissionId: a.id, quantity: '1', price: '3' });
    const c = await syncer.submittedOrder();
    await until([
      [a.id, 'PARTIALLY_FILLED'],
      [c.id, 'SUBMITTED'],
    ]);
    expect(await sync()).toEqual([]);

    await syncer.cancelOrder(b.id);
    await until([[b.id, 'CANCELLED']]);
  });

  it('keeps updatedAfter a filter: orders changed strictly after the instant', async () => {
    const syncer = await freshClient();
    const a = await syncer.submittedOrder({ quantity: '5' });
    const b = await syncer.submittedOrder({ quantity: '5' });
    const cancelled = (await syncer.cancelOrder(a.id)).orderSubmission!;
    await expect
      .poll(async () => (await syncer.listOrders({ orderBy: 'UPDATED_AT_ASC', filter: { updatedAfter: b.updatedAt } })).nodes.map((order) => order.id), {
        timeout: 10_000,
      })
      .toEqual(cancelled.updatedAt > b.updatedAt ? [a.id] : []);
  });

  it('refuses first outside 1-200 with a top-level BAD_USER_INPUT, and serves both ends', async () => {
    for (const first of [0, -1, 201]) {
      const error = await client.topLevelError('query ($first: Int) { listOrderSubmissions(first: $first) { nodes { id } } }', { first });
      expect(error.extensions.code).toBe('BAD_USER_INPUT');
    }
    expect((await client.listOrders({ first: 1 })).nodes).toHaveLength(1);
    expect((await client.listOrders({ first: 200 })).nodes).toHaveLength(5);
  });

  it('returns 50 by default', async () => {
    const many = await freshClient();
    await Promise.all(Array.from({ length: 51 }, () => many.submittedOrder()));
    const page = await many.listOrders();
    expect(page.nodes).toHaveLength(50);
    expect(page.pageInfo.hasNextPage).toBe(true);
    expect((await many.listOrders({ after: page.pageInfo.endCursor })).nodes).toHaveLength(1);
  });

  it('refuses a cursor that is not one, or one of the other ordering, with BAD_USER_INPUT', async () => {
    const { pageInfo } = await client.listOrders({ first: 1 });
    for (const [after, orderBy] of [
      ['garbage', 'SUBMITTED_AT_DESC'],
      [pageInfo.endCursor, 'UPDATED_AT_ASC'],
    ]) {
      const error = await client.topLevelError('query ($after: String, $orderBy: OrderSubmissionOrder) { listOrderSubmissions(after: $after, orderBy: $orderBy) { nodes { id } } }',
        { after, orderBy },
      );
      expect(error.extensions.code).toBe('BAD_USER_INPUT');
    }
  });

  it('refuses a malformed DateTime in the filter with BAD_USER_INPUT', async () => {
    const error = await client.topLevelError('{ listOrderSubmissions(filter: { updatedAfter: "yesterday" }) { nodes { id } } }');
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
  });

  it('never lists another account\'s orders, whatever the filter', async () => {
    const theirs = await t.bob.listAllOrders({ filter: { clientOrderId: 'l-0' } });
    expect(theirs).toHaveLength(1);
    expect(orders.map((order) => order.id)).not.toContain(theirs[0]!.id);
  });
});

describe('applyFill, the fills subgraph\'s internal entry point', () => {
  it('is not part of the public API: absent from the gateway schema and refused there', async () => {
    const { mutation, input } = await t.alice.data('{ mutation: __type(name: "Mutation") { fields { name } } input: __type(name: "ApplyFillInput") { name } }',
    );
    expect(mutation.fields.map((field: { name: string }) => field.name)).toEqual(expect.arrayContaining(['submitOrder', 'cancelOrderSubmission']));
    expect(mutation.fields.map((field: { name: string }) => field.name)).not.toContain('applyFill');
    expect(input).toBeNull();
    const order = await t.alice.submittedOrder();
    const result = await t.alice.graphql('mutation ($id: ID!) { applyFill(input: { executionId: "f", orderSubmissionId: $id, quantity: "1", price: "1", fee: "0", liquidity: UNKNOWN }) { outcome } }',
      { id: order.id },
    );
    expect(result.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const { orderSubmission } = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { status } }', { id: order.id });
    expect(orderSubmission.status).toBe('SUBMITTED');
  });

  it('refuses a call to the orders subgraph without a gateway assertion', async () => {
    const result = await t.stack.post(
      JSON.stringify({ query: 'mutation { applyFill(input: { executionId: "f", orderSubmissionId: "x", quantity: "1", price: "1", fee: "0", liquidity: UNKNOWN }) { outcome } }' }),
      { 'content-type': 'application/json' },
      t.stack.urls.orders,
    );
    expect(result.status).toBe(401);
  });

  it('applies fills to PARTIALLY_FILLED then FILLED, with the exact weighted average price', async () => {
    const order = await t.alice.submittedOrder({ quantity: '3' });
    const first = await applyFill(t.alice, { executionId: newId(), orderSubmissionId: order.id, quantity: '1', price: '10' });
    expect(first.outcome).toBe('APPLIED');
    expect(first.orderSubmission).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '1', remainingQuantity: '2', averageFillPrice: '10' });
    const second = await applyFill(t.alice, { executionId: newId(), orderSubmissionId: order.id, quantity: '2', price: '10.0000000001' });
    // (10 + 2 × 10.0000000001) / 3 = 10.0000000000666…, rounded half-even to 10 places.
    expect(second.orderSubmission).toMatchObject({
      status: 'FILLED',
      filledQuantity: '3',
      remainingQuantity: '0',
      averageFillPrice: '10.0000000001',
    });
    expect(await t.alice.order(order.id)).toEqual(second.orderSubmission);
  });

  it('answers a repeated execution id ALREADY_APPLIED without counting it twice, even once the order is FILLED', async () => {
    const order = await t.alice.submittedOrder({ quantity: '2' });
    const fill = { executionId: newId(), orderSubmissionId: order.id, quantity: '1', price: '5' };
    await applyFill(t.alice, fill);
    await applyFill(t.alice, { ...fill, executionId: newId() });
    const retry = await applyFill(t.alice, fill);
    expect(retry.outcome).toBe('ALREADY_APPLIED');
    expect(retry.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '2' });
  });

  it('refuses beyond the remaining quantity, a final order, and another account\'s order', async () => {
    const order = await t.alice.submittedOrder({ quantity: '1' });
    const over = await applyFill(t.alice, { executionId: newId(), orderSubmissionId: order.id, quantity: '1.5', price: '1' });
    expect(over).toMatchObject({ outcome: 'EXCEEDS_REMAINING', orderSubmission: { status: 'SUBMITTED', filledQuantity: '0' } });
    await t.alice.cancelOrder(order.id);
    const late = await applyFill(t.alice, { executionId: newId(), orderSubmissionId: order.id, quantity: '1', price: '1' });
    expect(late).toMatchObject({ outcome: 'NOT_FILLABLE', orderSubmission: { status: 'CANCELLED' } });
    const other = await t.alice.submittedOrder();
    expect(await applyFill(t.bob, { executionId: newId(), orderSubmissionId: other.id, quantity: '1', price: '1' })).toEqual({
      outcome: 'NOT_FOUND',
      orderSubmission: null,
    });
  });

  it('refuses a zero quantity or price with BAD_USER_INPUT', async () => {
    const order = await t.alice.submittedOrder();
    const result = await callOrdersSubgraph(t.alice, `mutation ($id: ID!) { applyFill(input: { executionId: "f-0", orderSubmissionId: $id, quantity: "0", price: "1", fee: "0", liquidity: UNKNOWN }) { outcome } }`, {
      id: order.id,
    });
    expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('the OrderSubmission entity', () => {
  it('resolves references of the caller\'s orders, and another account\'s or a missing one to null', async () => {
    const mine = await t.alice.submittedOrder({ clientOrderId: 'entity-1' });
    const theirs = await t.bob.submittedOrder();
    const result = await callOrdersSubgraph(t.alice,
      'query ($representations: [_Any!]!) { _entities(representations: $representations) { ... on OrderSubmission { id clientOrderId status } } }',
      {
        representations: [mine, theirs, { id: newId() }, { id: 'x' }].map((order) => ({ __typename: 'OrderSubmission', id: order.id })),
      },
    );
    expect(result.body.data._entities).toEqual([{ id: mine.id, clientOrderId: 'entity-1', status: 'SUBMITTED' }, null, null, null]);
  });
});
