import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { createKey } from '@ots/accounts';
import { changeStatus, createStrategy, data, type StrategyResult } from './support.ts';

let stack: TestStack;
let alice: { accountId: string; apiKey: string };
let bob: { accountId: string; apiKey: string };

beforeAll(async () => {
  stack = await startStack({ redis: 'none' });
  alice = await stack.createAccountWithKey('Alice');
  bob = await stack.createAccountWithKey('Bob');
});

afterAll(async () => {
  await stack?.close();
});

const ORDER_FIELDS = 'id clientOrderId status strategy { id name status }';

interface OrderResult {
  id: string;
  clientOrderId: string | null;
  status: string;
  strategy: { id: string; name: string; status: string } | null;
}

interface SubmitResult {
  orderSubmission: OrderResult | null;
  error: { code: string; field: string | null; message: string } | null;
}

async function submit(apiKey: string, input: { clientOrderId: string; strategyId?: string | null }): Promise<SubmitResult> {
  const result = await data(
    stack,
    apiKey,
    `mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { ${ORDER_FIELDS} } error { code field message } } }`,
    { input: { symbol: 'ACME', side: 'BUY', type: 'MARKET', quantity: '10', ...input } },
  );
  return result.submitOrder;
}

async function submitOk(apiKey: string, input: { clientOrderId: string; strategyId?: string | null }): Promise<OrderResult> {
  const result = await submit(apiKey, input);
  expect(result.error).toBeNull();
  return result.orderSubmission!;
}

async function ordersWithClientId(apiKey: string, clientOrderId: string): Promise<OrderResult[]> {
  const result = await data(
    stack,
    apiKey,
    `query ($id: String) { listOrderSubmissions(filter: { clientOrderId: $id }) { nodes { ${ORDER_FIELDS} } } }`,
    { id: clientOrderId },
  );
  return result.listOrderSubmissions.nodes;
}

async function strategyOrderIds(apiKey: string, strategyId: string, first = 50): Promise<string[] | null> {
  const result = await data(
    stack,
    apiKey,
    'query ($id: ID!, $first: Int) { strategy(id: $id) { orderSubmissions(first: $first) { nodes { id } } } }',
    { id: strategyId, first },
  );
  return result.strategy ? result.strategy.orderSubmissions.nodes.map((node: { id: string }) => node.id) : null;
}

describe('OrderSubmission.strategy (resolved by strategies)', () => {
  it('shows the strategy an order was submitted under, and null for an order without one', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Order strategy', 'for orders');
    const withStrategy = await submitOk(alice.apiKey, { clientOrderId: 'os-1', strategyId: strategy.id });
    expect(withStrategy.strategy).toEqual({ id: strategy.id, name: 'Order strategy', status: 'ACTIVE' });

    const without = await submitOk(alice.apiKey, { clientOrderId: 'os-2' });
    expect(without.strategy).toBeNull();

    const read = await data(
      stack,
      alice.apiKey,
      'query ($id: ID!) { orderSubmission(id: $id) { id strategy { id name description status createdAt } } }',
      { id: withStrategy.id },
    );
    expect(read.orderSubmission.strategy).toEqual({
      id: strategy.id,
      name: 'Order strategy',
      description: 'for orders',
      status: 'ACTIVE',
      createdAt: strategy.createdAt,
    });
  });

  it('resolves the strategies of a full page of 200 orders, each to its own strategy', async () => {
    const account = await stack.createAccountWithKey('Many orders');
    // Three keys of the account share the 200 submissions, so that no key nears its rate-limit burst.
    const keys = [account.apiKey];
    for (const name of ['second', 'third']) keys.push((await createKey(stack.management, account.accountId, { name })).apiKey);
    const strategies = await Promise.all(['North', 'South', 'East'].map((name) => createStrategy(stack, account.apiKey, name)));
    const expected = new Map<string, string | null>();
    for (let chunk = 0; chunk < 200; chunk += 10) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, offset) => {
          const i = chunk + offset;
          const strategy = i % 4 === 3 ? null : strategies[i % 4]!;
          const order = await submitOk(keys[i % keys.length]!, { clientOrderId: `page-${i}`, strategyId: strategy?.id ?? null });
          expected.set(order.id, strategy?.name ?? null);
        }),
      );
    }
    expect(expected.size).toBe(200);
    const page = await data(stack, account.apiKey, 'query { listOrderSubmissions(first: 200) { nodes { id strategy { name status } } } }');
    const nodes: { id: string; strategy: { name: string; status: string } | null }[] = page.listOrderSubmissions.nodes;
    expect(nodes).toHaveLength(200);
    for (const node of nodes) {
      const name = expected.get(node.id);
      expect(name).not.toBeUndefined();
      expect(node.strategy).toEqual(name === null ? null : { name, status: 'ACTIVE' });
    }
  });
});

describe('Strategy.orderSubmissions (contributed by orders)', () => {
  let first: StrategyResult;
  let second: StrategyResult;
  const firstOrders: string[] = [];
  const secondOrders: string[] = [];

  beforeAll(async () => {
    first = await createStrategy(stack, alice.apiKey, 'Reverse first');
    second = await createStrategy(stack, alice.apiKey, 'Reverse second');
    for (let i = 0; i < 3; i += 1) {
      firstOrders.push((await submitOk(alice.apiKey, { clientOrderId: `rev-a-${i}`, strategyId: first.id })).id);
      secondOrders.push((await submitOk(alice.apiKey, { clientOrderId: `rev-b-${i}`, strategyId: second.id })).id);
    }
    await submitOk(alice.apiKey, { clientOrderId: 'rev-none' });
  });

  it('lists only the strategy’s own orders, newest first', async () => {
    expect(await strategyOrderIds(alice.apiKey, first.id)).toEqual([...firstOrders].reverse());
    expect(await strategyOrderIds(alice.apiKey, second.id)).toEqual([...secondOrders].reverse());
  });

  it('pages a strategy’s orders with first and after', async () => {
    const query = `query ($id: ID!, $after: String) {
      strategy(id: $id) { orderSubmissions(first: 2, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }
    }`;
    const page1 = (await data(stack, alice.apiKey, query, { id: first.id, after: null })).strategy.orderSubmissions;
    expect(page1.pageInfo.hasNextPage).toBe(true);
    const page2 = (await data(stack, alice.apiKey, query, { id: first.id, after: page1.pageInfo.endCursor })).strategy.orderSubmissions;
    expect(page2.pageInfo.hasNextPage).toBe(false);
    expect([...page1.nodes, ...page2.nodes].map((node: { id: string }) => node.id)).toEqual([...firstOrders].reverse());
  });

  it('serves the orders of every strategy of a list in one request, both directions in one document', async () => {
    const result = await data(
      stack,
      alice.apiKey,
      `query { listStrategies(first: 10) { nodes { id orderSubmissions(first: 10) { nodes { id strategy { id } } } } } }`,
    );
    const byId = new Map<string, { id: string; strategy: { id: string } }[]>(
      result.listStrategies.nodes.map((node: { id: string; orderSubmissions: { nodes: { id: string; strategy: { id: string } }[] } }) => [
        node.id,
        node.orderSubmissions.nodes,
      ]),
    );
    expect(byId.get(first.id)!.map((order) => order.id)).toEqual([...firstOrders].reverse());
    expect(byId.get(second.id)!.map((order) => order.id)).toEqual([...secondOrders].reverse());
    for (const [strategyId, orders] of byId) {
      for (const order of orders) expect(order.strategy.id).toBe(strategyId);
    }
  });

  it('keeps existing orders untouched when their strategy is paused or archived', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Paused with orders');
    const order = await submitOk(alice.apiKey, { clientOrderId: 'kept-1', strategyId: strategy.id });
    await changeStatus(stack, alice.apiKey, 'pauseStrategy', strategy.id);
    const [afterPause] = await ordersWithClientId(alice.apiKey, 'kept-1');
    expect(afterPause).toEqual({ ...order, strategy: { ...order.strategy, status: 'PAUSED' } });
    expect(await strategyOrderIds(alice.apiKey, strategy.id)).toEqual([order.id]);

    await changeStatus(stack, alice.apiKey, 'archiveStrategy', strategy.id);
    const [afterArchive] = await ordersWithClientId(alice.apiKey, 'kept-1');
    expect(afterArchive).toEqual({ ...order, strategy: { ...order.strategy, status: 'ARCHIVED' } });
    expect(await strategyOrderIds(alice.apiKey, strategy.id)).toEqual([order.id]);

    const cancelled = await data(
      stack,
      alice.apiKey,
      'mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { status strategy { id } } error { code } } }',
      { id: order.id },
    );
    expect(cancelled.cancelOrderSubmission).toEqual({ orderSubmission: { status: 'CANCELLED', strategy: { id: strategy.id } }, error: null });
  });

  it('shows another account neither the strategy nor, through it, its orders', async () => {
    expect(await strategyOrderIds(bob.apiKey, first.id)).toBeNull();
    const bobsOrder = await data(stack, bob.apiKey, 'query ($id: ID!) { orderSubmission(id: $id) { id } }', { id: firstOrders[0] });
    expect(bobsOrder.orderSubmission).toBeNull();
    const bobsStrategy = await createStrategy(stack, bob.apiKey, 'Bob empty');
    expect(await strategyOrderIds(bob.apiKey, bobsStrategy.id)).toEqual([]);
  });
});

describe('submitOrder strategy checks', () => {
  it('accepts an ACTIVE strategy of the caller’s account', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Check active');
    const order = await submitOk(alice.apiKey, { clientOrderId: 'check-active', strategyId: strategy.id });
    expect(order.strategy).toMatchObject({ id: strategy.id, status: 'ACTIVE' });
  });

  it('refuses a paused strategy with STRATEGY_NOT_ACTIVE and creates nothing; after resume the same order goes through', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Check paused');
    await changeStatus(stack, alice.apiKey, 'pauseStrategy', strategy.id);
    const refused = await submit(alice.apiKey, { clientOrderId: 'check-paused', strategyId: strategy.id });
    expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'STRATEGY_NOT_ACTIVE' } });
    expect(await ordersWithClientId(alice.apiKey, 'check-paused')).toEqual([]);
    expect(await strategyOrderIds(alice.apiKey, strategy.id)).toEqual([]);

    await changeStatus(stack, alice.apiKey, 'resumeStrategy', strategy.id);
    const accepted = await submitOk(alice.apiKey, { clientOrderId: 'check-paused', strategyId: strategy.id });
    expect(accepted.strategy).toMatchObject({ id: strategy.id, status: 'ACTIVE' });
  });

  it('refuses an archived strategy with STRATEGY_NOT_ACTIVE and creates nothing', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Check archived');
    await changeStatus(stack, alice.apiKey, 'archiveStrategy', strategy.id);
    const refused = await submit(alice.apiKey, { clientOrderId: 'check-archived', strategyId: strategy.id });
    expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'STRATEGY_NOT_ACTIVE' } });
    expect(await ordersWithClientId(alice.apiKey, 'check-archived')).toEqual([]);
  });

  it('refuses a missing, malformed or another account’s strategy alike: NOT_FOUND on strategyId, nothing created', async () => {
    const bobsStrategy = await createStrategy(stack, bob.apiKey, 'Bob only');
    for (const [index, strategyId] of [newId(), 'not-a-uuid', bobsStrategy.id].entries()) {
      const clientOrderId = `check-missing-${index}`;
      const refused = await submit(alice.apiKey, { clientOrderId, strategyId });
      expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'NOT_FOUND', field: 'strategyId' } });
      expect(await ordersWithClientId(alice.apiKey, clientOrderId)).toEqual([]);
    }
    expect(await strategyOrderIds(bob.apiKey, bobsStrategy.id)).toEqual([]);
  });
});

describe('outages between strategies and orders', () => {
  it('while strategies is down: submitOrder with a strategy is TEMPORARILY_UNAVAILABLE and creates nothing, orders keep working', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Outage');
    const before = await submitOk(alice.apiKey, { clientOrderId: 'outage-before', strategyId: strategy.id });

    await stack.stopService('strategies');
    try {
      const started = Date.now();
      const refused = await submit(alice.apiKey, { clientOrderId: 'outage-retry', strategyId: strategy.id });
      expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
      expect(Date.now() - started).toBeLessThan(stack.config.limits.gatewayTimeoutMs);

      const withoutStrategy = await submit(alice.apiKey, { clientOrderId: 'outage-no-strategy' });
      expect(withoutStrategy.error).toBeNull();

      // Orders' own fields still answer; the strategy fields come back as a top-level error.
      const partial = await stack.graphql(
        alice.apiKey,
        'query ($id: ID!) { orderSubmission(id: $id) { id status strategy { name } } }',
        { id: before.id },
      );
      expect(partial.status).toBe(200);
      expect(partial.body.data.orderSubmission).toMatchObject({ id: before.id, status: 'SUBMITTED', strategy: null });
      expect(partial.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ extensions: { code: 'SERVICE_UNAVAILABLE' } })]));
    } finally {
      await stack.startService('strategies');
    }

    expect(await ordersWithClientId(alice.apiKey, 'outage-retry')).toEqual([]);
    const retried = await submitOk(alice.apiKey, { clientOrderId: 'outage-retry', strategyId: strategy.id });
    expect(retried.strategy).toEqual({ id: strategy.id, name: 'Outage', status: 'ACTIVE' });
    expect(await strategyOrderIds(alice.apiKey, strategy.id)).toEqual([retried.id, before.id]);
  });

  it('while orders is down: strategies keep answering, and a document that asks for orderSubmissions gets a top-level error', async () => {
    const strategy = await createStrategy(stack, alice.apiKey, 'Orders outage');
    await stack.stopService('orders');
    try {
      const own = await data(stack, alice.apiKey, 'query ($id: ID!) { strategy(id: $id) { id name status } }', { id: strategy.id });
      expect(own.strategy).toEqual({ id: strategy.id, name: 'Orders outage', status: 'ACTIVE' });
      const paused = await changeStatus(stack, alice.apiKey, 'pauseStrategy', strategy.id);
      expect(paused).toMatchObject({ strategy: { status: 'PAUSED' }, error: null });

      const started = Date.now();
      const partial = await stack.graphql(
        alice.apiKey,
        'query ($id: ID!) { strategy(id: $id) { id name orderSubmissions { nodes { id } } } }',
        { id: strategy.id },
      );
      expect(Date.now() - started).toBeLessThan(stack.config.limits.gatewayTimeoutMs);
      expect(partial.status).toBe(200);
      expect(partial.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ extensions: { code: 'SERVICE_UNAVAILABLE' } })]));
    } finally {
      await stack.startService('orders');
    }
    expect(await strategyOrderIds(alice.apiKey, strategy.id)).toEqual([]);
  });
});
