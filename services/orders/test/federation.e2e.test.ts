import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import type { ApiClient, Order, StrategyStatusMutation, SubmitOrderInput } from '../../../testing/client.ts';

/** Orders and strategies together: the strategy check at submission, and the fields each contributes to the other. */

const SUBGRAPH_TIMEOUT_MS = 2_000;

const t = useStack({ redis: 'none', env: { ...NO_RATE_LIMIT_ENV, SUBGRAPH_TIMEOUT_MS: String(SUBGRAPH_TIMEOUT_MS) } });

async function createStrategy(client: ApiClient, name: string): Promise<string> {
  return (await client.createdStrategy(name)).id;
}

async function setStatus(client: ApiClient, mutation: StrategyStatusMutation, id: string) {
  expect((await client.changeStrategyStatus(mutation, id)).error).toBeNull();
}

const strategyOrder = (strategyId: string, extra: Partial<SubmitOrderInput> = {}): SubmitOrderInput => ({
  symbol: 'ES',
  side: 'BUY',
  type: 'MARKET',
  quantity: '1',
  strategyId,
  ...extra,
});

describe('submitOrder with a strategy', () => {
  it('records the order under an ACTIVE strategy, whose fields the strategies subgraph resolves', async () => {
    const strategyId = await createStrategy(t.alice, 'Momentum');
    const order = await t.alice.submittedOrder(strategyOrder(strategyId));
    expect(order.strategy).toEqual({ id: strategyId });
    const { orderSubmission } = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { strategy { id name status } } }', {
      id: order.id,
    });
    expect(orderSubmission.strategy).toEqual({ id: strategyId, name: 'Momentum', status: 'ACTIVE' });
  });

  it.each(['pauseStrategy', 'archiveStrategy'] as const)('refuses a strategy after %s with STRATEGY_NOT_ACTIVE, creating nothing', async (mutation) => {
    const client = await t.newAccount();
    const strategyId = await createStrategy(client, `Not active ${mutation}`);
    await setStatus(client, mutation, strategyId);
    const payload = await client.submitOrder(strategyOrder(strategyId));
    expect(payload.orderSubmission).toBeNull();
    expect(payload.error).toMatchObject({ code: 'STRATEGY_NOT_ACTIVE', field: 'strategyId' });
    expect(await client.listAllOrders()).toEqual([]);
  });

  it('refuses another account\'s strategy exactly like a missing one or a malformed id: NOT_FOUND on strategyId', async () => {
    const client = await t.newAccount();
    const bobsStrategy = await createStrategy(t.bob, 'Bob only');
    const errors = [];
    for (const strategyId of [bobsStrategy, newId(), 'strategy-1']) {
      const payload = await client.submitOrder(strategyOrder(strategyId));
      expect(payload.orderSubmission).toBeNull();
      expect(payload.error).toMatchObject({ code: 'NOT_FOUND', field: 'strategyId' });
      errors.push(payload.error!.message.replace(strategyId, '<id>'));
    }
    expect(new Set(errors).size).toBe(1);
    expect(await client.listAllOrders()).toEqual([]);
  });

  it('leaves existing orders alone when their strategy is paused, and still answers their retries', async () => {
    const strategyId = await createStrategy(t.alice, 'Paused later');
    const input = strategyOrder(strategyId, { clientOrderId: 'before-pause' });
    const order = await t.alice.submittedOrder(input);
    await setStatus(t.alice, 'pauseStrategy', strategyId);
    const retry = await t.alice.submitOrder(input);
    expect(retry).toEqual({ orderSubmission: order, error: null });
    const { orderSubmission } = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { status strategy { status } } }', { id: order.id });
    expect(orderSubmission).toEqual({ status: 'SUBMITTED', strategy: { status: 'PAUSED' } });
  });
});

describe('strategy and orders, each through the other', () => {
  let client: ApiClient;
  let strategies: string[];
  let ordersByStrategy: Map<string, Order[]>;

  beforeAll(async () => {
    client = await t.newAccount();
    strategies = [await createStrategy(client, 'A'), await createStrategy(client, 'B'), await createStrategy(client, 'C')];
    ordersByStrategy = new Map(strategies.map((id) => [id, []]));
    for (let i = 0; i < 9; i += 1) {
      const strategyId = strategies[i % 2]!;
      ordersByStrategy.get(strategyId)!.push(await client.submittedOrder(strategyOrder(strategyId, { clientOrderId: `s-${i}` })));
    }
    await client.submittedOrder({ clientOrderId: 'no-strategy' });
  });

  const newestFirst = (orders: Order[]) => [...orders].reverse().map((order) => order.id);

  it('lists a strategy\'s orders on Strategy.orderSubmissions, newest first, paged', async () => {
    const [a] = strategies as [string];
    const query = `query ($id: ID!, $after: String) { strategy(id: $id) { orderSubmissions(first: 3, after: $after) {
      nodes { id strategy { id } } pageInfo { hasNextPage endCursor } } } }`;
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const { strategy } = await client.data(query, { id: a, after });
      const page = strategy.orderSubmissions;
      for (const node of page.nodes) expect(node.strategy).toEqual({ id: a });
      seen.push(...page.nodes.map((node: { id: string }) => node.id));
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    } while (after);
    expect(seen).toEqual(newestFirst(ordersByStrategy.get(a)!));
  });

  it('lists the orders of every strategy in a list, each its own, with the filter applied', async () => {
    const { listStrategies } = await client.data(`{ listStrategies(first: 10) { nodes { id all: orderSubmissions(first: 10) { nodes { id } }
          open: orderSubmissions(first: 10, filter: { clientOrderId: "s-1" }) { nodes { clientOrderId } } } } }`,
    );
    const byId = new Map(listStrategies.nodes.map((node: { id: string }) => [node.id, node]));
    for (const id of strategies) {
      const node = byId.get(id) as { all: { nodes: { id: string }[] }; open: { nodes: { clientOrderId: string }[] } };
      expect(node.all.nodes.map((order) => order.id)).toEqual(newestFirst(ordersByStrategy.get(id)!));
      expect(node.open.nodes).toEqual(id === strategies[1] ? [{ clientOrderId: 's-1' }] : []);
    }
  });

  it('filters listOrderSubmissions by strategyId', async () => {
    const [, b] = strategies as [string, string];
    expect((await client.listAllOrders({ filter: { strategyId: b } })).map((order) => order.id)).toEqual(newestFirst(ordersByStrategy.get(b)!));
  });

  it('resolves the strategy of every order of a 200-row page', async () => {
    const { listOrderSubmissions } = await client.data('{ listOrderSubmissions(first: 200) { nodes { clientOrderId strategy { name } } } }');
    const names = Object.fromEntries(listOrderSubmissions.nodes.map((node: { clientOrderId: string; strategy: { name: string } | null }) => [node.clientOrderId, node.strategy?.name ?? null]));
    expect(names).toEqual({ 's-0': 'A', 's-1': 'B', 's-2': 'A', 's-3': 'B', 's-4': 'A', 's-5': 'B', 's-6': 'A', 's-7': 'B', 's-8': 'A', 'no-strategy': null });
  });

  it('shows nothing of another account\'s strategy\'s orders', async () => {
    const [a] = strategies as [string];
    const { strategy } = await t.bob.data('query ($id: ID!) { strategy(id: $id) { id orderSubmissions { nodes { id } } } }', { id: a });
    expect(strategy).toBeNull();
    expect((await t.bob.listOrders({ filter: { strategyId: a } })).nodes).toEqual([]);
  });
});

describe('when the strategies subgraph does not answer', () => {
  it('returns TEMPORARILY_UNAVAILABLE for an order with a strategy while it is down, creating nothing; other orders go on', async () => {
    const client = await t.newAccount();
    const strategyId = await createStrategy(client, 'Outage');
    await t.stack.stopService('strategies');
    try {
      const input = strategyOrder(strategyId, { clientOrderId: 'during-outage' });
      const payload = await client.submitOrder(input);
      expect(payload.orderSubmission).toBeNull();
      expect(payload.error).toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE', field: null });
      expect(await client.listAllOrders()).toEqual([]);
      await client.submittedOrder({ clientOrderId: 'no-strategy' });
    } finally {
      await t.stack.startService('strategies');
    }
    const retry = await client.submitOrder(strategyOrder(strategyId, { clientOrderId: 'during-outage' }));
    expect(retry.error).toBeNull();
    expect((await client.listAllOrders()).map((order) => order.clientOrderId)).toEqual(['during-outage', 'no-strategy']);
  });

  it('gives up on a strategies subgraph that accepts but never answers, in time for the client to get TEMPORARILY_UNAVAILABLE', async () => {
    const client = await t.newAccount();
    const strategyId = await createStrategy(client, 'Hanging');
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const realUrl = t.stack.config.subgraphUrls.strategies;
    t.stack.config.subgraphUrls.strategies = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/graphql`;
    try {
      const started = Date.now();
      const payload = await client.submitOrder(strategyOrder(strategyId));
      expect(payload.error?.code).toBe('TEMPORARILY_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(SUBGRAPH_TIMEOUT_MS);
      expect(await client.listAllOrders()).toEqual([]);
    } finally {
      t.stack.config.subgraphUrls.strategies = realUrl;
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
