import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, setApiAccess } from '@ots/accounts';
import { useStack } from '../../../testing/fixture.ts';
import { FaultProxy, type ForwardedRequest } from '../../../testing/fault-proxy.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';
import {
  OtsApiError,
  OtsAuthenticationError,
  OtsClient,
  OtsConnectionError,
  OtsPayloadError,
  OtsPermissionError,
  OtsRequestError,
  verifyWebhook,
} from '../src/index.ts';

/**
 * The SDK against the real stack, through a relay that loses answers (contract section 10): a retried
 * call never creates twice, lists page by themselves, and every failure is one of the error classes.
 */
// The subgraph timeout outlasts the orders database's 5 s statement timeout, so that a statement held
// up by a row lock fails in the orders service (a TEMPORARILY_UNAVAILABLE of its own), not at the gateway.
const t = useStack({ env: { RATE_LIMIT_PER_SECOND: '10', RATE_LIMIT_BURST: '10', SUBGRAPH_TIMEOUT_MS: '8000' }, accounts: [] });
let proxy: FaultProxy;

beforeAll(async () => {
  proxy = await new FaultProxy(new URL(t.stack.gatewayUrl)).start();
});
afterAll(async () => {
  await proxy?.close();
});

async function newClient(options: { maxNetworkRetries?: number } = {}) {
  const { apiKey, accountId } = await t.stack.createAccountWithKey();
  return { client: new OtsClient({ apiKey, baseUrl: proxy.origin, ...options }), apiKey, accountId };
}

const mutation = (field: string) => (request: ForwardedRequest) => request.body.includes(field);

/** Holds the order's row lock, as a long transaction of another process would: its writes wait until `release`. */
async function lockOrderRow(orderId: string) {
  const database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();
  await database.query('begin');
  await database.query('select 1 from orders.order_submissions where id = $1 for update', [orderId]);
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      await database.query('rollback');
      await database.end();
    },
  };
}

/** How many statements of the orders database wait for a lock. */
async function waitingForLocks(): Promise<number> {
  const database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();
  try {
    const { rows } = await database.query<{ count: string }>("select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'");
    return Number(rows[0]!.count);
  } finally {
    await database.end();
  }
}

/** A `fetch` that shows each answer to `look` (the request's body and Idempotency-Key) before the client reads it. */
function watching(look: (request: { body: string; idempotencyKey: string | undefined }, response: Response) => Promise<void>): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const headers = (init?.headers ?? {}) as Record<string, string>;
    await look({ body: String(init?.body), idempotencyKey: headers['idempotency-key'] }, response);
    return response;
  };
}

async function limitOrders(client: OtsClient, symbol: string, count: number) {
  const orders = [];
  for (let i = 0; i < count; i += 1) orders.push(await client.orders.submit({ symbol, side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: String(i + 1) }));
  return orders;
}

describe('an API key with a character no key has', () => {
  it('is refused when the client is made, without quoting the key, rather than in a network error that would', () => {
    // Shaped like a key, made here so that nothing resembling one is written in the source.
    const key = ['svc', 'live', 'k'.repeat(38)].join('_');
    for (const apiKey of [`${key}\n`, `${key} `, `${key.slice(0, 12)}\r\n${key.slice(12)}`]) {
      let refusal: unknown;
      try {
        new OtsClient({ apiKey, baseUrl: 'http://127.0.0.1:9' });
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(TypeError);
      expect((refusal as Error).message).not.toContain('svc_live_');
    }
  });
});

describe('a call whose answer is lost', () => {
  it('is retried and submits one order, even without a clientOrderId', async () => {
    const { client } = await newClient();
    proxy.dropNextResponses(1, mutation('submitOrder'));
    const dropped = proxy.droppedResponses;
    const order = await client.orders.submit({ symbol: 'LOST', side: 'BUY', type: 'MARKET', quantity: '3' });
    expect(proxy.droppedResponses).toBe(dropped + 1);
    expect(order.clientOrderId).toMatch(/^ots-/);
    const orders = await client.orders.list({ filter: { symbol: 'LOST' } }).toArray();
    expect(orders.map((o) => o.id)).toEqual([order.id]);
  });

  it('is retried and creates one strategy', async () => {
    const { client } = await newClient();
    proxy.dropNextResponses(2, mutation('createStrategy'));
    const strategy = await client.strategies.create({ name: 'Lost answers' });
    expect(strategy.name).toBe('Lost answers');
    expect((await client.strategies.list().toArray()).map((s) => s.id)).toEqual([strategy.id]);
  });

  it('is retried and creates one webhook endpoint, whose secret comes back with the replayed answer', async () => {
    const { client } = await newClient();
    proxy.dropNextResponses(1, mutation('createWebhookEndpoint'));
    const created = await client.webhooks.create({ url: 'http://127.0.0.1:9/hooks', description: 'lost answer' });
    expect(created.signingSecret).toMatch(/^whsec_/);
    expect((await client.webhooks.list()).map((endpoint) => endpoint.id)).toEqual([created.webhookEndpoint.id]);
  });

  it('sends the same Idempotency-Key on every attempt of one call, and a new one for the next call', async () => {
    const { client } = await newClient();
    const from = proxy.requests.length;
    proxy.dropNextResponses(1, mutation('createStrategy'));
    await client.strategies.create({ name: 'Keyed once' });
    await client.strategies.create({ name: 'Keyed twice' });
    const keys = proxy.requests.slice(from).map((request) => request.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[2]).not.toBe(keys[0]);
  });

  it('gives up with OtsConnectionError once its retries are spent', async () => {
    const { client } = await newClient({ maxNetworkRetries: 1 });
    proxy.dropNextResponses(2, mutation('createStrategy'));
    await expect(client.strategies.create({ name: 'Never answered' })).rejects.toMatchObject({ name: 'OtsConnectionError' });
  });

  it('names the address it could not reach', async () => {
    const client = new OtsClient({ apiKey: 'svc_live_unused', baseUrl: 'http://127.0.0.1:1', maxNetworkRetries: 0 });
    await expect(client.viewer()).rejects.toMatchObject({ name: 'OtsConnectionError', message: 'http://127.0.0.1:1/graphql could not be reached' });
  });
});

describe('a call whose first attempt is still running', () => {
  it('is retried through 409 under its one key, within maxNetworkRetries, and gets the answer of that attempt', async () => {
    const { client: setup, apiKey } = await newClient();
    const [order] = await limitOrders(setup, 'HELD', 1);
    const lock = await lockOrderRow(order!.id);
    const conflicts: (string | undefined)[] = [];
    // Each attempt gives up after 1 s; the first runs on at the gateway, waiting for the row lock.
    const client = new OtsClient({
      apiKey,
      baseUrl: proxy.origin,
      timeoutMs: 1_000,
      // Room for a loaded machine: the held attempt must end and keep its answer within the back-offs left.
      maxNetworkRetries: 5,
      fetch: watching(async (request, response) => {
        if (response.status !== 409) return;
        conflicts.push(request.idempotencyKey);
        await lock.release();
      }),
    });
    try {
      const cancelled = await client.orders.cancel(order!.id);
      expect(cancelled).toMatchObject({ id: order!.id, status: 'CANCELLED' });
    } finally {
      await lock.release();
    }
    expect(conflicts.length).toBeGreaterThan(0);
    expect(new Set(conflicts).size).toBe(1);
  });

  it('counts a 409 among its maxNetworkRetries: with none it throws the 409 at once, with 2 it makes 3 attempts', async () => {
    const { client: setup, apiKey } = await newClient();
    const [order] = await limitOrders(setup, 'BUSY', 1);
    const lock = await lockOrderRow(order!.id);
    const idempotencyKey = crypto.randomUUID();
    const attempts = () => proxy.requests.filter((request) => request.headers['idempotency-key'] === idempotencyKey).length;
    try {
      // The first call holds the key at the gateway, its cancel waiting for the row lock.
      const first = setup.orders.cancel(order!.id, { idempotencyKey }).catch((error: unknown) => error);
      await expect.poll(() => waitingForLocks(), { timeout: 5_000 }).toBeGreaterThan(0);

      for (const maxNetworkRetries of [0, 2]) {
        const from = attempts();
        const client = new OtsClient({ apiKey, baseUrl: proxy.origin, maxNetworkRetries });
        const failure = await client.orders.cancel(order!.id, { idempotencyKey }).catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(OtsApiError);
        expect(failure).toMatchObject({ status: 409, idempotencyKey });
        expect(attempts() - from).toBe(maxNetworkRetries + 1);
      }

      await lock.release();
      expect(await first).toMatchObject({ id: order!.id, status: 'CANCELLED' });
    } finally {
      await lock.release();
    }
  });

  it('names its Idempotency-Key and clientOrderId on the error, and a call under both carries it on', async () => {
    const { client } = await newClient({ maxNetworkRetries: 0 });
    proxy.dropNextResponses(1, mutation('submitOrder'));
    const input = { symbol: 'CARRIED', side: 'BUY', type: 'MARKET', quantity: '2' } as const;
    const failure = await client.orders.submit(input).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsConnectionError);
    const { idempotencyKey, clientOrderId } = failure as OtsConnectionError;
    expect(idempotencyKey).toEqual(expect.any(String));
    expect(clientOrderId).toMatch(/^ots-/);

    const from = proxy.requests.length;
    const order = await client.orders.submit({ ...input, clientOrderId }, { idempotencyKey });
    expect(order.clientOrderId).toBe(clientOrderId);
    expect(proxy.requests.slice(from).map((request) => request.headers['idempotency-key'])).toEqual([idempotencyKey]);
    expect((await client.orders.list({ filter: { symbol: 'CARRIED' } }).toArray()).map((o) => o.id)).toEqual([order.id]);
  });
  it('carries on under the Idempotency-Key alone, with the same input: the made clientOrderId is the same, the first order is replayed', async () => {
    const { client: setup, apiKey } = await newClient();
    const replayed: (string | null)[] = [];
    const client = new OtsClient({
      apiKey,
      baseUrl: proxy.origin,
      maxNetworkRetries: 0,
      fetch: watching(async (_request, response) => {
        replayed.push(response.headers.get('idempotent-replayed'));
      }),
    });
    proxy.dropNextResponses(1, mutation('submitOrder'));
    const input = { symbol: 'KEYONLY', side: 'SELL', type: 'MARKET', quantity: '4' } as const;
    const failure = await client.orders.submit(input).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsConnectionError);
    const { idempotencyKey, clientOrderId } = failure as OtsConnectionError;

    const order = await client.orders.submit(input, { idempotencyKey });
    expect(order.clientOrderId).toBe(clientOrderId);
    expect(replayed).toEqual(['true']);
    expect((await setup.orders.list({ filter: { symbol: 'KEYONLY' } }).toArray()).map((o) => o.id)).toEqual([order.id]);
  });
});

describe('cancelAll through an outage of the orders database', () => {
  it('keeps what a cut-short call cancelled, calls again under a new key, and returns every order it cancelled', async () => {
    const { client: setup, apiKey } = await newClient();
    const orders = await limitOrders(setup, 'SWEEP', 3);
    // The second order's cancel waits for the lock until the statement times out: the call answers
    // the first order cancelled, hasMore and TEMPORARILY_UNAVAILABLE together.
    const lock = await lockOrderRow(orders[1]!.id);
    const calls: { idempotencyKey: string | undefined; answer: unknown }[] = [];
    const client = new OtsClient({
      apiKey,
      baseUrl: proxy.origin,
      fetch: watching(async (request, response) => {
        if (!request.body.includes('cancelOrderSubmissions')) return;
        calls.push({ idempotencyKey: request.idempotencyKey, answer: await response.clone().json() });
        await lock.release();
      }),
    });
    let result: Awaited<ReturnType<OtsClient['orders']['cancelAll']>>;
    try {
      result = await client.orders.cancelAll({ symbol: 'SWEEP' });
    } finally {
      await lock.release();
    }
    expect(calls[0]!.answer).toMatchObject({
      data: { cancelOrderSubmissions: { cancelledCount: 1, hasMore: true, error: { code: 'TEMPORARILY_UNAVAILABLE' } } },
    });
    expect(calls).toHaveLength(2);
    expect(calls[1]!.idempotencyKey).not.toBe(calls[0]!.idempotencyKey);
    expect(result.cancelledCount).toBe(3);
    expect(result.orderSubmissions.map((o) => o.id).sort()).toEqual(orders.map((o) => o.id).sort());
    expect((await setup.orders.list({ filter: { symbol: 'SWEEP' } }).toArray()).map((o) => o.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
  });

  it('throws once its calls stop making progress, naming the orders it did cancel', async () => {
    const { client: setup, apiKey } = await newClient();
    const orders = await limitOrders(setup, 'STUCK', 2);
    const lock = await lockOrderRow(orders[1]!.id);
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin, maxNetworkRetries: 0 });
    let failure: unknown;
    try {
      failure = await client.orders.cancelAll({ symbol: 'STUCK' }).catch((error: unknown) => error);
    } finally {
      await lock.release();
    }
    expect(failure).toBeInstanceOf(OtsPayloadError);
    expect(failure).toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE' });
    expect((failure as OtsPayloadError).cancelledOrderSubmissions?.map((o) => o.id)).toEqual([orders[0]!.id]);
  });
});

describe('a call while the service it needs is down', () => {
  it('is retried after SERVICE_UNAVAILABLE with its one Idempotency-Key, and creates once when the service is back', async () => {
    const { client } = await newClient({ maxNetworkRetries: 6 });
    const from = proxy.requests.length;
    const answered = proxy.statuses.length;
    await t.stack.stopService('strategies');
    let outcome: Promise<unknown>;
    try {
      outcome = client.strategies.create({ name: 'Through an outage' }).catch((error: unknown) => error);
      // The first attempt is answered (SERVICE_UNAVAILABLE) while the service is still down.
      await expect.poll(() => proxy.statuses.length).toBeGreaterThan(answered);
    } finally {
      await t.stack.startService('strategies');
    }
    const strategy = await outcome;
    expect(strategy).toMatchObject({ name: 'Through an outage' });
    expect((await client.strategies.list().toArray()).map((s) => s.id)).toEqual([(strategy as { id: string }).id]);
    const attempts = proxy.requests.slice(from).filter(mutation('createStrategy'));
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(new Set(attempts.map((request) => request.headers['idempotency-key'])).size).toBe(1);
  });
});

describe('a call whose service ran it and did not answer', () => {
  it('stops at the replayed outage and throws it, saying the mutation may have run: the strategy is created once', async () => {
    // Between the gateway and strategies: strategies runs the mutation, and its answer is lost.
    const relay = await new FaultProxy(new URL(t.stack.urls.strategies)).start();
    relay.dropNextResponses(1, mutation('createStrategy'));
    const strategiesUrl = new URL(new URL(t.stack.urls.strategies).pathname, relay.origin).toString();
    const gateway = await t.stack.anotherGateway({ config: { subgraphUrls: { ...t.stack.config.subgraphUrls, strategies: strategiesUrl } } });
    try {
      const { client: reader, apiKey } = await newClient();
      const replayed: (string | null)[] = [];
      const client = new OtsClient({
        apiKey,
        baseUrl: new URL(gateway.url).origin,
        maxNetworkRetries: 4,
        fetch: watching(async (_request, response) => {
          replayed.push(response.headers.get('idempotent-replayed'));
        }),
      });
      const failure = await client.strategies.create({ name: 'Answer lost' }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(OtsApiError);
      expect(failure).toMatchObject({ code: 'SERVICE_UNAVAILABLE', idempotencyKey: expect.any(String) });
      expect((failure as OtsApiError).message).toMatch(/may have run.*new key/);
      // One retry, answered with the kept outage; the retries left would only replay it.
      expect(replayed).toEqual([null, 'true']);
      expect((await reader.strategies.list().toArray()).map((s) => s.name)).toEqual(['Answer lost']);
    } finally {
      await gateway.close();
      await relay.close();
    }
  });
});

describe('the rate limit', () => {
  it('is honoured: a burst over it completes by waiting as Retry-After says', async () => {
    const { client } = await newClient({ maxNetworkRetries: 6 });
    const from = proxy.statuses.length;
    const viewers = await Promise.all(Array.from({ length: 25 }, () => client.viewer()));
    expect(viewers).toHaveLength(25);
    expect(proxy.statuses.slice(from)).toContain(429);
  });
});

describe('paging', () => {
  it('iterates every page by itself, and a sync resumes from its cursor', async () => {
    const { client } = await newClient();
    for (let i = 0; i < 5; i += 1) await client.orders.submit({ symbol: 'PAGE', side: 'SELL', type: 'LIMIT', limitPrice: '10', quantity: String(i + 1) });
    expect((await client.orders.list({ pageSize: 2 }).toArray()).map((o) => o.quantity)).toEqual(['5', '4', '3', '2', '1']);

    const sync = client.orders.sync({ pageSize: 2 });
    const seen = await sync.toArray();
    expect(seen).toHaveLength(5);
    const cancelled = await client.orders.cancel(seen[0]!.id);
    await expect.poll(async () => (await client.orders.sync({ after: sync.cursor }).toArray()).map((o) => [o.id, o.status])).toEqual([[cancelled.id, 'CANCELLED']]);
  });
});

describe('errors', () => {
  it('throws a payload error as OtsPayloadError with its code', async () => {
    const { client } = await newClient();
    const failure = await client.orders.cancel('00000000-0000-4000-8000-000000000000').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPayloadError);
    expect(failure).toMatchObject({ code: 'NOT_FOUND' });
    const invalid = await client.orders.submit({ symbol: 'X', side: 'BUY', type: 'MARKET', quantity: '0' }).catch((error: unknown) => error);
    expect(invalid).toMatchObject({ code: 'VALIDATION_FAILED', field: 'quantity' });
  });

  it('throws OtsRequestError for an argument out of range, OtsAuthenticationError for a bad key, OtsPermissionError without API access', async () => {
    const { client, accountId } = await newClient();
    await expect(client.orders.list({ pageSize: 500 }).toArray()).rejects.toBeInstanceOf(OtsRequestError);
    const stranger = new OtsClient({ apiKey: 'svc_live_notakey', baseUrl: proxy.origin });
    await expect(stranger.viewer()).rejects.toBeInstanceOf(OtsAuthenticationError);
    await setApiAccess(t.stack.operator, { accountId, enabled: false });
    await expect(client.viewer()).rejects.toBeInstanceOf(OtsPermissionError);
  });
});

describe('a key without the scope a call needs', () => {
  it('throws OtsPermissionError naming the scope, and creates nothing', async () => {
    const { accountId } = await newClient();
    const { apiKey } = await createKey(t.stack.operator, { accountId, scopes: ['read'] });
    const reader = new OtsClient({ apiKey, baseUrl: proxy.origin });
    // A key can always learn what it may do, before a call is refused.
    expect((await reader.viewer()).apiKey).toMatchObject({ scopes: ['READ'], allowedCidrs: [], revokedAt: null });
    const from = proxy.requests.length;
    const failure = await reader.orders.submit({ symbol: 'SCOPED', side: 'BUY', type: 'MARKET', quantity: '1' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect(failure).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'orders:write', message: 'This API key lacks the scope orders:write' });
    // Refused for good: not retried.
    expect(proxy.requests.length - from).toBe(1);
    expect(await reader.orders.list().toArray()).toEqual([]);
  });
});

describe('verifyWebhook', () => {
  it('returns the event of a genuine delivery and refuses a tampered one', async () => {
    const { client } = await newClient();
    const receiver = await new Receiver().start();
    try {
      const { signingSecret } = await client.webhooks.create({ url: receiver.url, eventTypes: ['strategy.created'] });
      const strategy = await client.strategies.create({ name: 'Signed' });
      await expect.poll(() => receiver.received.length).toBeGreaterThan(0);
      const delivery = receiver.received[0]!;
      const event = verifyWebhook(signingSecret, delivery.body, delivery.headers);
      expect(event).toMatchObject({ type: 'strategy.created', data: { id: strategy.id } });
      expect(() => verifyWebhook(signingSecret, delivery.body.replace('Signed', 'Forged'), delivery.headers)).toThrow(OtsRequestError);
    } finally {
      await receiver.close();
    }
  });
});

describe('webhooks.deliveries', () => {
  it("lists an endpoint's attempts newest first, paging by itself; another account's endpoint has none", async () => {
    const { client } = await newClient();
    const receiver = await new Receiver().start();
    try {
      const { webhookEndpoint } = await client.webhooks.create({ url: receiver.url, eventTypes: ['strategy.created'] });
      const first = await client.strategies.create({ name: 'Delivered first' });
      const second = await client.strategies.create({ name: 'Delivered second' });
      await expect.poll(() => client.webhooks.deliveries(webhookEndpoint.id).toArray().then((all) => all.length), { timeout: 20_000 }).toBe(2);
      const deliveries = await client.webhooks.deliveries(webhookEndpoint.id, { pageSize: 1 }).toArray();
      expect(deliveries.map((delivery) => delivery.event?.data)).toEqual([expect.objectContaining({ id: second.id }), expect.objectContaining({ id: first.id })]);
      expect(deliveries[0]).toMatchObject({ attempt: 1, statusCode: 200, failure: null, succeeded: true, event: { type: 'strategy.created' } });
      expect(deliveries[0]!.eventId).toBe(deliveries[0]!.event!.id);

      const { client: stranger } = await newClient();
      expect(await stranger.webhooks.deliveries(webhookEndpoint.id).toArray()).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
