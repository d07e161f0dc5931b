import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { useStack } from '../../../testing/fixture.ts';
import { createKey } from '@ots/accounts';
import { ApiClient, type OrderWithStrategyFieldsFragment, type StrategyFieldsFragment, type SubmitOrderInput } from '../../../testing/client.ts';
import { ListOrdersWithStrategyDocument, SubmitOrderWithStrategyDocument } from '../../../testing/generated/operations.ts';

const t = useStack({ redis: 'none' });

type OrderResult = OrderWithStrategyFieldsFragment;

async function submit(client: ApiClient, input: { clientOrderId: string; strategyId?: string | null }) {
  const order: SubmitOrderInput = { symbol: 'ACME', side: 'BUY', type: 'MARKET', quantity: '10', ...input };
  return (await client.run(SubmitOrderWithStrategyDocument, { input: order })).submitOrder;
}

async function submitOk(client: ApiClient, input: { clientOrderId: string; strategyId?: string | null }): Promise<OrderResult> {
  const result = await submit(client, input);
  expect(result.error).toBeNull();
  return result.orderSubmission!;
}

async function ordersWithClientId(client: ApiClient, clientOrderId: string): Promise<OrderResult[]> {
  return (await client.run(ListOrdersWithStrategyDocument, { filter: { clientOrderId } })).listOrderSubmissions.nodes;
}

async function strategyOrderIds(client: ApiClient, strategyId: string, first = 50): Promise<string[] | null> {
  const result = await client.data(
    'query ($id: ID!, $first: Int) { strategy(id: $id) { orderSubmissions(first: $first) { nodes { id } } } }',
    { id: strategyId, first },
  );
  return result.strategy ? result.strategy.orderSubmissions.nodes.map((node: { id: string }) => node.id) : null;
}

describe('OrderSubmission.strategy (resolved by strategies)', () => {
  it('shows the strategy an order was submitted under, and null for an order without one', async () => {
    const strategy = await t.alice.createdStrategy('Order strategy', 'for orders');
    const withStrategy = await submitOk(t.alice, { clientOrderId: 'os-1', strategyId: strategy.id });
    expect(withStrategy.strategy).toEqual({ id: strategy.id, name: 'Order strategy', status: 'ACTIVE' });

    const without = await submitOk(t.alice, { clientOrderId: 'os-2' });
    expect(without.strategy).toBeNull();

    const read = await t.alice.data('query ($id: ID!) { orderSubmission(id: $id) { id strategy { id name description status createdAt } } }',
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
    const account = await t.newAccount('Many orders');
    // Three keys of the account share the 200 submissions, so that no key nears its rate-limit burst.
    const keys = [account];
    for (const name of ['second', 'third']) {
      const { key, apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, name });
      keys.push(new ApiClient(t.stack, { accountId: account.accountId, apiKeyId: key.id, apiKey }));
    }
    const strategies = await Promise.all(['North', 'South', 'East'].map((name) => account.createdStrategy(name)));
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
    const page = await account.data('query { listOrderSubmissions(first: 200) { nodes { id strategy { name status } } } }');
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
  let first: StrategyFieldsFragment;
  let second: StrategyFieldsFragment;
  const firstOrders: string[] = [];
  const secondOrders: string[] = [];

  beforeAll(async () => {
    first = await t.alice.createdStrategy('Reverse first');
    second = await t.alice.createdStrategy('Reverse second');
    for (let i = 0; i < 3; i += 1) {
      firstOrders.push((await submitOk(t.alice, { clientOrderId: `rev-a-${i}`, strategyId: first.id })).id);
      secondOrders.push((await submitOk(t.alice, { clientOrderId: `rev-b-${i}`, strategyId: second.id })).id);
    }
    await submitOk(t.alice, { clientOrderId: 'rev-none' });
  });

  it('lists only the strategy’s own orders, newest first', async () => {
    expect(await strategyOrderIds(t.alice, first.id)).toEqual([...firstOrders].reverse());
    expect(await strategyOrderIds(t.alice, second.id)).toEqual([...secondOrders].reverse());
  });

  it('pages a strategy’s orders with first and after', async () => {
    const query = `query ($id: ID!, $after: String) {
      strategy(id: $id) { orderSubmissions(first: 2, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }
    }`;
    const page1 = (await t.alice.data(query, { id: first.id, after: null })).strategy.orderSubmissions;
    expect(page1.pageInfo.hasNextPage).toBe(true);
    const page2 = (await t.alice.data(query, { id: first.id, after: page1.pageInfo.endCursor })).strategy.orderSubmissions;
    expect(page2.pageInfo.hasNextPage).toBe(false);
    expect([...page1.nodes, ...page2.nodes].map((node: { id: string }) => node.id)).toEqual([...firstOrders].reverse());
  });

  it('serves the orders of every strategy of a list in one request, both directions in one document', async () => {
    const result = await t.alice.data(`query { listStrategies(first: 10) { nodes { id orderSubmissions(first: 10) { nodes { id strategy { id } } } } } }`,
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
    const strategy = await t.alice.createdStrategy('Paused with orders');
    const order = await submitOk(t.alice, { clientOrderId: 'kept-1', strategyId: strategy.id });
    await t.alice.changeStrategyStatus('pauseStrategy', strategy.id);
    const [afterPause] = await ordersWithClientId(t.alice, 'kept-1');
    expect(afterPause).toEqual({ ...order, strategy: { ...order.strategy, status: 'PAUSED' } });
    expect(await strategyOrderIds(t.alice, strategy.id)).toEqual([order.id]);

    await t.alice.changeStrategyStatus('archiveStrategy', strategy.id);
    const [afterArchive] = await ordersWithClientId(t.alice, 'kept-1');
    expect(afterArchive).toEqual({ ...order, strategy: { ...order.strategy, status: 'ARCHIVED' } });
    expect(await strategyOrderIds(t.alice, strategy.id)).toEqual([order.id]);

    const cancelled = await t.alice.data('mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { status strategy { id } } error { code } } }',
      { id: order.id },
    );
    expect(cancelled.cancelOrderSubmission).toEqual({ orderSubmission: { status: 'CANCELLED', strategy: { id: strategy.id } }, error: null });
  });

  it('shows another account neither the strategy nor, through it, its orders', async () => {
    expect(await strategyOrderIds(t.bob, first.id)).toBeNull();
    const bobsOrder = await t.bob.data('query ($id: ID!) { orderSubmission(id: $id) { id } }', { id: firstOrders[0] });
    expect(bobsOrder.orderSubmission).toBeNull();
    const bobsStrategy = await t.bob.createdStrategy('Bob empty');
    expect(await strategyOrderIds(t.bob, bobsStrategy.id)).toEqual([]);
  });
});

describe('submitOrder strategy checks', () => {
  it('accepts an ACTIVE strategy of the caller’s account', async () => {
    const strategy = await t.alice.createdStrategy('Check active');
    const order = await submitOk(t.alice, { clientOrderId: 'check-active', strategyId: strategy.id });
    expect(order.strategy).toMatchObject({ id: strategy.id, status: 'ACTIVE' });
  });

  it('refuses a paused strategy with STRATEGY_NOT_ACTIVE and creates nothing; after resume the same order goes through', async () => {
    const strategy = await t.alice.createdStrategy('Check paused');
    await t.alice.changeStrategyStatus('pauseStrategy', strategy.id);
    const refused = await submit(t.alice, { clientOrderId: 'check-paused', strategyId: strategy.id });
    expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'STRATEGY_NOT_ACTIVE' } });
    expect(await ordersWithClientId(t.alice, 'check-paused')).toEqual([]);
    expect(await strategyOrderIds(t.alice, strategy.id)).toEqual([]);

    await t.alice.changeStrategyStatus('resumeStrategy', strategy.id);
    const accepted = await submitOk(t.alice, { clientOrderId: 'check-paused', strategyId: strategy.id });
    expect(accepted.strategy).toMatchObject({ id: strategy.id, status: 'ACTIVE' });
  });

  it('refuses an archived strategy with STRATEGY_NOT_ACTIVE and creates nothing', async () => {
    const strategy = await t.alice.createdStrategy('Check archived');
    await t.alice.changeStrategyStatus('archiveStrategy', strategy.id);
    const refused = await submit(t.alice, { clientOrderId: 'check-archived', strategyId: strategy.id });
    expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'STRATEGY_NOT_ACTIVE' } });
    expect(await ordersWithClientId(t.alice, 'check-archived')).toEqual([]);
  });

  it('refuses a missing, malformed or another account’s strategy alike: NOT_FOUND on strategyId, nothing created', async () => {
    const bobsStrategy = await t.bob.createdStrategy('Bob only');
    for (const [index, strategyId] of [newId(), 'not-a-uuid', bobsStrategy.id].entries()) {
      const clientOrderId = `check-missing-${index}`;
      const refused = await submit(t.alice, { clientOrderId, strategyId });
      expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'NOT_FOUND', field: 'strategyId' } });
      expect(await ordersWithClientId(t.alice, clientOrderId)).toEqual([]);
    }
    expect(await strategyOrderIds(t.bob, bobsStrategy.id)).toEqual([]);
  });
});

describe('outages between strategies and orders', () => {
  it('while strategies is down: submitOrder with a strategy is TEMPORARILY_UNAVAILABLE and creates nothing, orders keep working', async () => {
    const strategy = await t.alice.createdStrategy('Outage');
    const before = await submitOk(t.alice, { clientOrderId: 'outage-before', strategyId: strategy.id });

    await t.stack.stopService('strategies');
    try {
      const started = Date.now();
      const refused = await submit(t.alice, { clientOrderId: 'outage-retry', strategyId: strategy.id });
      expect(refused).toMatchObject({ orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
      expect(Date.now() - started).toBeLessThan(t.stack.config.limits.gatewayTimeoutMs);

      const withoutStrategy = await submit(t.alice, { clientOrderId: 'outage-no-strategy' });
      expect(withoutStrategy.error).toBeNull();

      // Orders' own fields still answer; the strategy fields come back as a top-level error.
      const partial = await t.alice.graphql('query ($id: ID!) { orderSubmission(id: $id) { id status strategy { name } } }',
        { id: before.id },
      );
      expect(partial.status).toBe(200);
      expect(partial.body.data.orderSubmission).toMatchObject({ id: before.id, status: 'SUBMITTED', strategy: null });
      expect(partial.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ extensions: { code: 'SERVICE_UNAVAILABLE' } })]));
    } finally {
      await t.stack.startService('strategies');
    }

    expect(await ordersWithClientId(t.alice, 'outage-retry')).toEqual([]);
    const retried = await submitOk(t.alice, { clientOrderId: 'outage-retry', strategyId: strategy.id });
    expect(retried.strategy).toEqual({ id: strategy.id, name: 'Outage', status: 'ACTIVE' });
    expect(await strategyOrderIds(t.alice, strategy.id)).toEqual([retried.id, before.id]);
  });

  it('while orders is down: strategies keep answering, and a document that asks for orderSubmissions gets a top-level error', async () => {
    const strategy = await t.alice.createdStrategy('Orders outage');
    await t.stack.stopService('orders');
    try {
      const own = await t.alice.data('query ($id: ID!) { strategy(id: $id) { id name status } }', { id: strategy.id });
      expect(own.strategy).toEqual({ id: strategy.id, name: 'Orders outage', status: 'ACTIVE' });
      const paused = await t.alice.changeStrategyStatus('pauseStrategy', strategy.id);
      expect(paused).toMatchObject({ strategy: { status: 'PAUSED' }, error: null });

      const started = Date.now();
      const partial = await t.alice.graphql('query ($id: ID!) { strategy(id: $id) { id name orderSubmissions { nodes { id } } } }',
        { id: strategy.id },
      );
      expect(Date.now() - started).toBeLessThan(t.stack.config.limits.gatewayTimeoutMs);
      expect(partial.status).toBe(200);
      expect(partial.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ extensions: { code: 'SERVICE_UNAVAILABLE' } })]));
    } finally {
      await t.stack.startService('orders');
    }
    expect(await strategyOrderIds(t.alice, strategy.id)).toEqual([]);
  });
});
