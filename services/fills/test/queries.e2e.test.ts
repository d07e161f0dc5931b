import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import type { ApiClient, ListFillsQuery, RecordFillInput } from '../../../testing/client.ts';
import { createStrategy, recorded, submitOrder } from './support/fixtures.ts';

const t = useStack({ env: NO_RATE_LIMIT_ENV });

type FillPage = ListFillsQuery['listFills'];

const execution = () => `exec-${randomUUID()}`;
const at = (minute: number, second = 0) => new Date(Date.UTC(2026, 2, 2, 9, minute, second)).toISOString();

async function fillOrder(client: ApiClient, order: { id: string }, quantity: string, price: string, extra: Partial<RecordFillInput> = {}) {
  return (await recorded(client, { orderSubmissionId: order.id, executionId: execution(), quantity, price, ...extra })).fill;
}

async function positionsOf(client: ApiClient, strategyId: string) {
  const result = await client.data(`query ($id: ID!) { strategy(id: $id) { id positions { symbol netQuantity averageCost realizedPnl } } }`, {
    id: strategyId,
  });
  return result.strategy?.positions as { symbol: string; netQuantity: string; averageCost: string | null; realizedPnl: string }[] | undefined;
}

describe('fill(id)', () => {
  it("returns the caller's fill with its order's current state, and null for anything else", async () => {
    const order = await submitOrder(t.alice, { quantity: '4' });
    const fill = await fillOrder(t.alice, order, '1', '20');
    await fillOrder(t.alice, order, '1', '22');

    const result = await t.alice.data(`query ($id: ID!) { fill(id: $id) { id quantity orderSubmission { id status filledQuantity averageFillPrice } } }`, {
      id: fill.id,
    });
    expect(result.fill).toEqual({
      id: fill.id,
      quantity: '1',
      orderSubmission: { id: order.id, status: 'PARTIALLY_FILLED', filledQuantity: '2', averageFillPrice: '21' },
    });
    expect(await t.alice.fill(fill.id.toUpperCase())).toMatchObject({ id: fill.id });

    expect(await t.bob.fill(fill.id)).toBeNull();
    expect(await t.alice.fill(randomUUID())).toBeNull();
    expect(await t.alice.fill('not-a-uuid')).toBeNull();
  });
});

describe('listFills', () => {
  let carol: ApiClient;
  let strategyId: string;
  let orderA: { id: string };
  let orderB: { id: string };
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    carol = await t.newAccount('Carol');
    strategyId = await createStrategy(carol, 'Momentum');
    orderA = await submitOrder(carol, { symbol: 'ACME', quantity: '100', strategyId });
    orderB = await submitOrder(carol, { symbol: 'GLOBEX', side: 'SELL', quantity: '100' });
    // Recorded out of execution order on purpose; c1 and c2 share an execution time.
    ids.a3 = (await fillOrder(carol, orderA, '1', '10', { executedAt: at(3) })).id;
    ids.b1 = (await fillOrder(carol, orderB, '1', '10', { executedAt: at(1) })).id;
    ids.a5 = (await fillOrder(carol, orderA, '1', '10', { executedAt: at(5) })).id;
    ids.c1 = (await fillOrder(carol, orderB, '1', '10', { executedAt: at(4) })).id;
    ids.c2 = (await fillOrder(carol, orderA, '1', '10', { executedAt: at(4) })).id;
    ids.b2 = (await fillOrder(carol, orderB, '1', '10', { executedAt: at(2) })).id;
  });

  // Fills executed in the same millisecond come by id, descending.
  const newestFirst = () => [ids.a5, ...[ids.c1!, ids.c2!].sort().reverse(), ids.a3, ids.b2, ids.b1];

  it('lists newest first by execution time, then id', async () => {
    const page = await carol.listFills();
    expect(page.nodes.map((fill) => fill.id)).toEqual(newestFirst());
    expect(page.pageInfo).toEqual({ hasNextPage: false, endCursor: page.edges.at(-1)?.cursor });
  });

  it('pages with keyset cursors, neither skipping nor repeating rows recorded while paging', async () => {
    const expected = newestFirst();
    const first = await carol.listFills({ first: 2 });
    expect(first.nodes.map((fill) => fill.id)).toEqual(expected.slice(0, 2));
    expect(first.pageInfo.hasNextPage).toBe(true);

    // Recorded mid-paging: one newer than everything (ahead of the cursor), one older than everything.
    const newest = await fillOrder(carol, orderA, '1', '10', { executedAt: at(9) });
    const oldest = await fillOrder(carol, orderB, '1', '10', { executedAt: at(0) });

    const seen = [...first.nodes.map((fill) => fill.id)];
    let page: FillPage = first;
    while (page.pageInfo.hasNextPage) {
      page = await carol.listFills({ first: 2, after: page.pageInfo.endCursor });
      seen.push(...page.nodes.map((fill) => fill.id));
    }
    expect(seen).toEqual([...expected, oldest.id]);
    expect(seen).not.toContain(newest.id);
    expect(page.pageInfo.hasNextPage).toBe(false);
  });

  it('filters by order, strategy, symbol and strict execution-time bounds', async () => {
    const idsOf = async (filter: Record<string, unknown>) => (await carol.listFills({ filter })).nodes.map((fill) => fill.id);
    expect(await idsOf({ orderSubmissionId: orderB.id, executedAfter: at(0), executedBefore: at(9) })).toEqual(
      [ids.c1, ids.b2, ids.b1],
    );
    expect((await idsOf({ strategyId })).sort()).toEqual((await idsOf({ orderSubmissionId: orderA.id })).sort());
    expect(await idsOf({ symbol: 'globex', executedAfter: at(1), executedBefore: at(4) })).toEqual([ids.b2]);
    expect(await idsOf({ executedAfter: at(3), executedBefore: at(5) })).toEqual(newestFirst().slice(1, 3));
    // Bounds finer than a millisecond: a fill at at(4) is strictly before 0.5 ms past it, and not after it.
    const halfPast = (time: string) => time.replace('Z', '500Z');
    expect(await idsOf({ executedAfter: at(3), executedBefore: halfPast(at(4)) })).toEqual(await idsOf({ executedAfter: at(3), executedBefore: at(5) }));
    expect(await idsOf({ executedAfter: halfPast(at(3)), executedBefore: at(5) })).toEqual(await idsOf({ executedAfter: at(3), executedBefore: at(5) }));
    expect(await idsOf({ orderSubmissionId: 'not-a-uuid' })).toEqual([]);
    expect(await idsOf({ strategyId: randomUUID() })).toEqual([]);
  });

  it('treats an empty-string filter as a condition nothing meets, as orders does: an empty list, never every fill', async () => {
    const idsOf = async (filter: Record<string, unknown>) => (await carol.listFills({ filter })).nodes.map((fill) => fill.id);
    const all = await idsOf({});
    expect(all.length).toBeGreaterThanOrEqual(Object.keys(ids).length);
    for (const filter of [{ orderSubmissionId: '' }, { strategyId: '' }, { symbol: '' }, { symbol: '', orderSubmissionId: orderA.id }]) {
      expect(await idsOf(filter), JSON.stringify(filter)).toEqual([]);
    }
    // Null is no condition at all.
    expect(await idsOf({ orderSubmissionId: null, strategyId: null, symbol: null, executedAfter: null, executedBefore: null })).toEqual(all);
    const orders = await carol.data(`{ listOrderSubmissions(filter: { strategyId: "", symbol: "" }) { nodes { id } } }`);
    expect(orders.listOrderSubmissions.nodes).toEqual([]);
  });

  it("shows no other account's fills", async () => {
    const bobsPage = await t.bob.listFills({ filter: { orderSubmissionId: orderA.id } });
    expect(bobsPage.nodes).toEqual([]);
    const bobsAll = await t.bob.listFills({ first: 200 });
    expect(bobsAll.nodes.some((fill) => Object.values(ids).includes(fill.id))).toBe(false);
  });

  it('refuses an out-of-range first and a foreign cursor with BAD_USER_INPUT', async () => {
    const query = `query ($first: Int, $after: String) { listFills(first: $first, after: $after) { nodes { id } } }`;
    for (const variables of [{ first: 0 }, { first: 201 }, { after: 'garbage' }, { after: Buffer.from('["other","x"]').toString('base64url') }]) {
      const error = await carol.topLevelError(query, variables);
      expect(error.extensions.code, JSON.stringify(variables)).toBe('BAD_USER_INPUT');
    }
  });

  it('refuses a cursor whose keys were edited, with the wording orders and strategies use', async () => {
    const query = `query ($after: String) { listFills(first: 2, after: $after) { nodes { id } } }`;
    const page = await carol.listFills({ first: 2 });
    const issued = page.pageInfo.endCursor!;
    const id = page.nodes.at(-1)!.id;
    // A cursor is sealed: a byte changed anywhere is refused.
    const flipped = Buffer.from(issued, 'base64url');
    flipped[20] = flipped[20]! ^ 1;
    expect(await carol.topLevelError(query, { after: flipped.toString('base64url') })).toMatchObject({
      message: 'after is not a cursor issued for this list and ordering',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    // Cursors issued in the clear before they were sealed still open, so their keys are checked as ever.
    for (const executedAt of ['2030', '2026-03-02T09:04:00Z', '2026-03-02 09:04:00.000Z']) {
      const edited = Buffer.from(JSON.stringify(['fills:EXECUTED_AT_DESC', executedAt, id])).toString('base64url');
      const error = await carol.topLevelError(query, { after: edited });
      expect(error, executedAt).toMatchObject({
        message: 'after is not a cursor issued for this list and ordering',
        extensions: { code: 'BAD_USER_INPUT' },
      });
    }
    const orders = await carol.topLevelError(`{ listOrderSubmissions(after: "${Buffer.from('["SUBMITTED_AT_DESC","2030","x"]').toString('base64url')}") { nodes { id } } }`);
    expect(orders.message).toBe('after is not a cursor issued for this list and ordering');
  });
});

describe('OrderSubmission.fills', () => {
  it('lists each order its own applied fills, oldest first, across a page of orders', async () => {
    const dave = await t.newAccount('Dave');
    const first = await submitOrder(dave, { quantity: '10' });
    const second = await submitOrder(dave, { quantity: '10' });
    await submitOrder(dave, { quantity: '10' });
    const late = await fillOrder(dave, first, '1', '10', { executedAt: at(7) });
    const early = await fillOrder(dave, first, '2', '11', { executedAt: at(6) });
    const other = await fillOrder(dave, second, '3', '12', { executedAt: at(8) });

    const result = await dave.data(`{ listOrderSubmissions(first: 10) { nodes { id fills { id quantity } } } }`);
    const fillsByOrder = new Map(
      (result.listOrderSubmissions.nodes as { id: string; fills: { id: string }[] }[]).map((order) => [order.id, order.fills.map((fill) => fill.id)]),
    );
    expect(fillsByOrder.get(first.id)).toEqual([early.id, late.id]);
    expect(fillsByOrder.get(second.id)).toEqual([other.id]);
    expect([...fillsByOrder.values()].filter((fills) => fills.length === 0)).toHaveLength(1);
    expect((await dave.orderWithFills(first.id))?.fills.map((fill) => fill.id)).toEqual([early.id, late.id]);
  });
});

describe('Strategy.positions', () => {
  it('computes the issue example: buy 10 @ 100, sell 4 @ 110 with fee 1', async () => {
    const strategyId = await createStrategy(t.alice, 'Example');
    const buy = await submitOrder(t.alice, { symbol: 'ACME', side: 'BUY', quantity: '10', strategyId });
    const sell = await submitOrder(t.alice, { symbol: 'ACME', side: 'SELL', quantity: '4', strategyId });
    await fillOrder(t.alice, buy, '10', '100');
    await fillOrder(t.alice, sell, '4', '110', { fee: '1' });
    expect(await positionsOf(t.alice, strategyId)).toEqual([{ symbol: 'ACME', netQuantity: '6', averageCost: '100', realizedPnl: '39' }]);
  });

  it('realizes the closed part of a flip and restarts the cost at the flipping price', async () => {
    const strategyId = await createStrategy(t.alice, 'Flipper');
    const buy = await submitOrder(t.alice, { symbol: 'INITECH', side: 'BUY', quantity: '10', strategyId });
    const sell = await submitOrder(t.alice, { symbol: 'INITECH', side: 'SELL', quantity: '15', strategyId });
    await fillOrder(t.alice, buy, '10', '100', { executedAt: at(10) });
    await fillOrder(t.alice, sell, '15', '110', { fee: '2', executedAt: at(11) });
    expect(await positionsOf(t.alice, strategyId)).toEqual([{ symbol: 'INITECH', netQuantity: '-5', averageCost: '110', realizedPnl: '98' }]);

    // Covering the short at 104 realizes (110 − 104) × 5; the position is flat and has no average cost.
    const cover = await submitOrder(t.alice, { symbol: 'INITECH', side: 'BUY', quantity: '5', strategyId });
    await fillOrder(t.alice, cover, '5', '104', { executedAt: at(12) });
    expect(await positionsOf(t.alice, strategyId)).toEqual([{ symbol: 'INITECH', netQuantity: '0', averageCost: null, realizedPnl: '128' }]);
  });

  it('applies fills in execution order even when reported late, per symbol, and ignores orders without a strategy', async () => {
    const strategyId = await createStrategy(t.alice, 'Late reports');
    const buy = await submitOrder(t.alice, { symbol: 'UMBRELLA', side: 'BUY', quantity: '3', strategyId });
    const sell = await submitOrder(t.alice, { symbol: 'UMBRELLA', side: 'SELL', quantity: '1', strategyId });
    const other = await submitOrder(t.alice, { symbol: 'HOOLI', side: 'SELL', quantity: '2', strategyId });
    const unattached = await submitOrder(t.alice, { symbol: 'UMBRELLA', side: 'BUY', quantity: '50' });
    await fillOrder(t.alice, sell, '1', '13', { executedAt: at(22) });
    await fillOrder(t.alice, buy, '1', '10', { executedAt: at(20) });
    await fillOrder(t.alice, buy, '2', '11', { executedAt: at(21), fee: '0.3' });
    await fillOrder(t.alice, other, '2', '7.5', { executedAt: at(23) });
    await fillOrder(t.alice, unattached, '50', '1');
    // Average (10 + 22) / 3 = 10.666…; selling 1 at 13 realizes 2.333…, minus the 0.3 fee.
    expect(await positionsOf(t.alice, strategyId)).toEqual([
      { symbol: 'HOOLI', netQuantity: '-2', averageCost: '7.5', realizedPnl: '0' },
      { symbol: 'UMBRELLA', netQuantity: '2', averageCost: '10.6666666667', realizedPnl: '2.0333333333' },
    ]);
  });

  it("keeps every strategy's positions to itself, and to its account", async () => {
    const [first, second] = [await createStrategy(t.bob, 'One'), await createStrategy(t.bob, 'Two')];
    await fillOrder(t.bob, await submitOrder(t.bob, { symbol: 'ACME', quantity: '1', strategyId: first }), '1', '5');
    await fillOrder(t.bob, await submitOrder(t.bob, { symbol: 'ACME', side: 'SELL', quantity: '2', strategyId: second }), '2', '6');

    const result = await t.bob.data(`{ listStrategies(first: 10) { nodes { id positions { symbol netQuantity averageCost } } } }`);
    const positions = new Map((result.listStrategies.nodes as { id: string; positions: unknown[] }[]).map((node) => [node.id, node.positions]));
    expect(positions.get(first)).toEqual([{ symbol: 'ACME', netQuantity: '1', averageCost: '5' }]);
    expect(positions.get(second)).toEqual([{ symbol: 'ACME', netQuantity: '-2', averageCost: '6' }]);

    expect(await positionsOf(t.alice, first)).toBeUndefined();
  });
});
