import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { data, list, listAll, STACK_ENV, submit, submitted, type Client, type Order } from './e2e.ts';

/** Orders and strategies together: the strategy check at submission, and the fields each contributes to the other. */

let stack: TestStack;
let alice: Client;
let bob: Client;

const SUBGRAPH_TIMEOUT_MS = 2_000;

beforeAll(async () => {
  stack = await startStack({ redis: 'none', env: { ...STACK_ENV, SUBGRAPH_TIMEOUT_MS: String(SUBGRAPH_TIMEOUT_MS) } });
  [alice, bob] = await Promise.all([stack.createAccountWithKey('Alice'), stack.createAccountWithKey('Bob')]);
});
afterAll(async () => {
  await stack?.close();
});

async function createStrategy(client: Client, name: string): Promise<string> {
  const { createStrategy: payload } = await data(
    stack,
    client,
    'mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { id } error { code message } } }',
    { input: { name } },
  );
  expect(payload.error).toBeNull();
  return payload.strategy.id;
}

async function setStatus(client: Client, mutation: 'pauseStrategy' | 'archiveStrategy' | 'resumeStrategy', id: string) {
  const result = await data(stack, client, `mutation ($id: ID!) { ${mutation}(id: $id) { strategy { status } error { code } } }`, { id });
  expect(result[mutation].error).toBeNull();
}

const strategyOrder = (strategyId: string, extra: Record<string, unknown> = {}) => ({
  symbol: 'ES',
  side: 'BUY',
  type: 'MARKET',
  quantity: '1',
  strategyId,
  ...extra,
});

describe('submitOrder with a strategy', () => {
  it('records the order under an ACTIVE strategy, whose fields the strategies subgraph resolves', async () => {
    const strategyId = await createStrategy(alice, 'Momentum');
    const order = await submitted(stack, alice, strategyOrder(strategyId));
    expect(order.strategy).toEqual({ id: strategyId });
    const { orderSubmission } = await data(stack, alice, 'query ($id: ID!) { orderSubmission(id: $id) { strategy { id name status } } }', {
      id: order.id,
    });
    expect(orderSubmission.strategy).toEqual({ id: strategyId, name: 'Momentum', status: 'ACTIVE' });
  });

  it.each(['pauseStrategy', 'archiveStrategy'] as const)('refuses a strategy after %s with STRATEGY_NOT_ACTIVE, creating nothing', async (mutation) => {
    const client = await stack.createAccountWithKey();
    const strategyId = await createStrategy(client, `Not active ${mutation}`);
    await setStatus(client, mutation, strategyId);
    const payload = await submit(stack, client, strategyOrder(strategyId));
    expect(payload.orderSubmission).toBeNull();
    expect(payload.error).toMatchObject({ code: 'STRATEGY_NOT_ACTIVE', field: 'strategyId' });
    expect(await listAll(stack, client)).toEqual([]);
  });

  it('refuses another account\'s strategy exactly like a missing one or a malformed id: NOT_FOUND on strategyId', async () => {
    const client = await stack.createAccountWithKey();
    const bobsStrategy = await createStrategy(bob, 'Bob only');
    const errors = [];
    for (const strategyId of [bobsStrategy, newId(), 'strategy-1']) {
      const payload = await submit(stack, client, strategyOrder(strategyId));
      expect(payload.orderSubmission).toBeNull();
      expect(payload.error).toMatchObject({ code: 'NOT_FOUND', field: 'strategyId' });
      errors.push(payload.error!.message.replace(strategyId, '<id>'));
    }
    expect(new Set(errors).size).toBe(1);
    expect(await listAll(stack, client)).toEqual([]);
  });

  it('leaves existing orders alone when their strategy is paused, and still answers their retries', async () => {
    const strategyId = await createStrategy(alice, 'Paused later');
    const input = strategyOrder(strategyId, { clientOrderId: 'before-pause' });
    const order = await submitted(stack, alice, input);
    await setStatus(alice, 'pauseStrategy', strategyId);
    const retry = await submit(stack, alice, input);
    expect(retry).toEqual({ orderSubmission: order, error: null });
    const { orderSubmission } = await data(stack, alice, 'query ($id: ID!) { orderSubmission(id: $id) { status strategy { status } } }', { id: order.id });
    expect(orderSubmission).toEqual({ status: 'SUBMITTED', strategy: { status: 'PAUSED' } });
  });
});

describe('strategy and orders, each through the other', () => {
  let client: Client;
  let strategies: string[];
  let ordersByStrategy: Map<string, Order[]>;

  beforeAll(async () => {
    client = await stack.createAccountWithKey();
    strategies = [await createStrategy(client, 'A'), await createStrategy(client, 'B'), await createStrategy(client, 'C')];
    ordersByStrategy = new Map(strategies.map((id) => [id, []]));
    for (let i = 0; i < 9; i += 1) {
      const strategyId = strategies[i % 2]!;
      ordersByStrategy.get(strategyId)!.push(await submitted(stack, client, strategyOrder(strategyId, { clientOrderId: `s-${i}` })));
    }
    await submitted(stack, client, { clientOrderId: 'no-strategy' });
  });

  const newestFirst = (orders: Order[]) => [...orders].reverse().map((order) => order.id);

  it('lists a strategy\'s orders on Strategy.orderSubmissions, newest first, paged', async () => {
    const [a] = strategies as [string];
    const query = `query ($id: ID!, $after: String) { strategy(id: $id) { orderSubmissions(first: 3, after: $after) {
      nodes { id strategy { id } } pageInfo { hasNextPage endCursor } } } }`;
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const { strategy } = await data(stack, client, query, { id: a, after });
      const page = strategy.orderSubmissions;
      for (const node of page.nodes) expect(node.strategy).toEqual({ id: a });
      seen.push(...page.nodes.map((node: { id: string }) => node.id));
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    } while (after);
    expect(seen).toEqual(newestFirst(ordersByStrategy.get(a)!));
  });

  it('lists the orders of every strategy in a list, each its own, with the filter applied', async () => {
    const { listStrategies } = await data(
      stack,
      client,
      `{ listStrategies(first: 10) { nodes { id all: orderSubmissions(first: 10) { nodes { id } }
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
    expect((await listAll(stack, client, { filter: { strategyId: b } })).map((order) => order.id)).toEqual(newestFirst(ordersByStrategy.get(b)!));
  });

  it('resolves the strategy of every order of a 200-row page', async () => {
    const { listOrderSubmissions } = await data(stack, client, '{ listOrderSubmissions(first: 200) { nodes { clientOrderId strategy { name } } } }');
    const names = Object.fromEntries(listOrderSubmissions.nodes.map((node: { clientOrderId: string; strategy: { name: string } | null }) => [node.clientOrderId, node.strategy?.name ?? null]));
    expect(names).toEqual({ 's-0': 'A', 's-1': 'B', 's-2': 'A', 's-3': 'B', 's-4': 'A', 's-5': 'B', 's-6': 'A', 's-7': 'B', 's-8': 'A', 'no-strategy': null });
  });

  it('shows nothing of another account\'s strategy\'s orders', async () => {
    const [a] = strategies as [string];
    const { strategy } = await data(stack, bob, 'query ($id: ID!) { strategy(id: $id) { id orderSubmissions { nodes { id } } } }', { id: a });
    expect(strategy).toBeNull();
    expect((await list(stack, bob, { filter: { strategyId: a } })).nodes).toEqual([]);
  });
});

describe('when the strategies subgraph does not answer', () => {
  it('returns TEMPORARILY_UNAVAILABLE for an order with a strategy while it is down, creating nothing; other orders go on', async () => {
    const client = await stack.createAccountWithKey();
    const strategyId = await createStrategy(client, 'Outage');
    await stack.stopService('strategies');
    try {
      const input = strategyOrder(strategyId, { clientOrderId: 'during-outage' });
      const payload = await submit(stack, client, input);
      expect(payload.orderSubmission).toBeNull();
      expect(payload.error).toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE', field: null });
      expect(await listAll(stack, client)).toEqual([]);
      await submitted(stack, client, { clientOrderId: 'no-strategy' });
    } finally {
      await stack.startService('strategies');
    }
    const retry = await submit(stack, client, strategyOrder(strategyId, { clientOrderId: 'during-outage' }));
    expect(retry.error).toBeNull();
    expect((await listAll(stack, client)).map((order) => order.clientOrderId)).toEqual(['during-outage', 'no-strategy']);
  });

  it('gives up on a strategies subgraph that accepts but never answers, in time for the client to get TEMPORARILY_UNAVAILABLE', async () => {
    const client = await stack.createAccountWithKey();
    const strategyId = await createStrategy(client, 'Hanging');
    const held = new Set<net.Socket>();
    const silent = net.createServer((socket) => held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const realUrl = stack.config.subgraphUrls.strategies;
    stack.config.subgraphUrls.strategies = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/graphql`;
    try {
      const started = Date.now();
      const payload = await submit(stack, client, strategyOrder(strategyId));
      expect(payload.error?.code).toBe('TEMPORARILY_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(SUBGRAPH_TIMEOUT_MS);
      expect(await listAll(stack, client)).toEqual([]);
    } finally {
      stack.config.subgraphUrls.strategies = realUrl;
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
