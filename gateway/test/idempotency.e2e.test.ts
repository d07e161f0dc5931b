import { createServer, type IncomingMessage, type Server } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createLogger } from '@ots/shared/logger';
import { runService } from '@ots/shared/service';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import { strategiesService } from '@ots/strategies/service';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { createKey, IdempotencyStore, openKeyStore, type OpenedKeyStore } from '@ots/accounts';
import { useStack, type ApiClient } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';
import type { GatewayContext } from '../src/data-source.ts';
import { registerIdempotency } from '../src/idempotency.ts';
import { startGateway } from '../src/server.ts';
import { addGatewayTimeout } from '../src/timeouts.ts';

/** Contract section 4: `Idempotency-Key` on every mutation, per account, kept 24 hours in Postgres. */
const t = useStack();

const SUBMIT = `mutation Submit($symbol: String!) {
  submitOrder(input: { symbol: $symbol, side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id symbol } error { code } }
}`;
const CREATE_STRATEGY = 'mutation($name: String!) { createStrategy(input: { name: $name }) { strategy { id } error { code } } }';

let keyCounter = 0;
const freshKey = () => `test-key-${process.pid}-${(keyCounter += 1)}`;

function send(client: ApiClient, key: string | undefined, query: string, variables: Record<string, unknown>, url = t.stack.gatewayUrl): Promise<HttpResult> {
  return t.stack.post(
    JSON.stringify({ query, variables }),
    { 'content-type': 'application/json', 'x-api-key': client.apiKey, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    url,
  );
}

async function ordersOf(client: ApiClient, symbol: string) {
  return (await client.listAllOrders({ filter: { symbol } })).length;
}

async function strategiesNamed(client: ApiClient, name: string) {
  const strategies = await client.data('{ listStrategies(first: 200) { nodes { name } } }');
  return strategies.listStrategies.nodes.filter((s: { name: string }) => s.name === name).length;
}

/** Runs `request` while `service` is stopped; the service is started again whatever happens. */
async function whileDown<T>(service: Parameters<typeof t.stack.stopService>[0], request: () => Promise<T>): Promise<T> {
  await t.stack.stopService(service);
  try {
    return await request();
  } finally {
    await t.stack.startService(service);
  }
}

/** An HTTP relay to `target` that holds every request for `delayMs` first: a subgraph that is slow to answer. */
async function slowRelay(target: string, delayMs: number): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((incoming: IncomingMessage, outgoing) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of incoming) chunks.push(chunk as Buffer);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const headers = Object.fromEntries(
        Object.entries(incoming.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string' && !['host', 'connection', 'content-length'].includes(entry[0])),
      );
      const answer = await fetch(target, { method: incoming.method, headers, body: Buffer.concat(chunks) });
      outgoing.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      outgoing.end(await answer.text());
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const replicas: { gateway: RunningServer; keys: OpenedKeyStore }[] = [];
async function startReplica() {
  const logger = createLogger('replica', 'silent');
  const keys = openKeyStore(t.stack.config, logger, { listen: true });
  const gateway = await startGateway({ config: t.stack.config, keyStore: keys.keyStore, redis: keys.redis, logger, port: 0, isReady: async () => true });
  const replica = { gateway, keys };
  replicas.push(replica);
  return replica;
}
async function stopReplica(replica: { gateway: RunningServer; keys: OpenedKeyStore }) {
  await replica.gateway.close();
  await replica.keys.close();
  replicas.splice(replicas.indexOf(replica), 1);
}
afterAll(async () => {
  for (const replica of [...replicas]) await stopReplica(replica);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Harness {
  url: string;
  /** How many times the handler ran the mutation. */
  runs: () => number;
  close: () => Promise<void>;
}

/**
 * The idempotency hooks around a stand-in GraphQL handler, on the real store, with the gateway
 * timeout: for the orders of events a real subgraph cannot be made to produce on cue.
 * `run` is the handler: it gets the request's context (to note a subgraph that failed) and returns the body.
 */
async function harness(options: {
  store: IdempotencyStore;
  gatewayTimeoutMs?: number;
  run: (context: GatewayContext, run: number) => Promise<unknown>;
  /** Registered on the route before the idempotency hooks. */
  beforeIdempotency?: (routes: FastifyInstance) => void;
}): Promise<Harness> {
  const app = Fastify();
  addGatewayTimeout(app, options.gatewayTimeoutMs ?? 5_000);
  const contexts = new WeakMap<FastifyRequest, GatewayContext>();
  const contextOf = (request: FastifyRequest) => {
    if (!contexts.has(request)) {
      contexts.set(request, {
        caller: { accountId: t.alice.accountId, apiKeyId: 'harness', scopes: ['read', 'write'] },
        assertion: '',
        requestId: String(request.id),
        unavailableServices: new Set(),
        servicesThatMayHaveRun: new Set(),
      });
    }
    return contexts.get(request)!;
  };
  let runs = 0;
  let purge: { stop: () => Promise<void> } | undefined;
  await app.register(async (routes) => {
    options.beforeIdempotency?.(routes);
    const rules = { required: new Map(), nested: { required: new Map(), returns: new Map() }, owners: new Map([['Mutation.createStrategy', 'strategies']]) };
    purge = registerIdempotency(routes, options.store, contextOf, rules, createLogger('harness', 'silent'));
    routes.post('/graphql', async (request, reply) => {
      runs += 1;
      const body = await options.run(contextOf(request), runs);
      void reply.header('content-type', 'application/json');
      return JSON.stringify(body);
    });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    runs: () => runs,
    close: async () => {
      await purge?.stop();
      await app.close();
    },
  };
}

const createdStrategy = { data: { createStrategy: { strategy: { id: 'S1' }, error: null } } };
/** What the store keeps for a claim abandoned past its lease, in the tests that call it directly. */
const INTERRUPTED = { status: 200, contentType: 'application/json', body: '{"interrupted":true}' };

describe('Idempotency-Key', () => {
  it('answers a repeat with the first answer and Idempotent-Replayed, running the mutation once', async () => {
    const key = freshKey();
    const first = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.A' });
    const second = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.A' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await ordersOf(t.alice, 'IDEM.A')).toBe(1);
  });

  it('keeps an answer that shows a secret once sealed, so the database holds no signing secret, and replays it whole', async () => {
    const client = await t.newAccount('Sealed answers');
    const key = freshKey();
    const create = 'mutation { createWebhookEndpoint(input: { url: "https://hooks.example.com/ots" }) { webhookEndpoint { id } signingSecret error { code } } }';
    const first = await send(client, key, create, {});
    const secret = first.body.data.createWebhookEndpoint.signingSecret as string;
    expect(secret).toMatch(/^whsec_/);
    const kept = await sql<{ response_body: string }>`select response_body from idempotency_keys where account_id = ${client.accountId} and key = ${key}`.execute(
      t.stack.running.keys.db,
    );
    expect(kept.rows).toHaveLength(1);
    expect(kept.rows[0]!.response_body).not.toContain(secret);
    expect(kept.rows[0]!.response_body).not.toContain('whsec_');
    const repeat = await send(client, key, create, {});
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body).toEqual(first.body);
  });

  it('runs a repeat again without the header, and ignores the header on queries', async () => {
    await send(t.alice, undefined, SUBMIT, { symbol: 'IDEM.B' });
    await send(t.alice, undefined, SUBMIT, { symbol: 'IDEM.B' });
    expect(await ordersOf(t.alice, 'IDEM.B')).toBe(2);
    const key = freshKey();
    const query = await send(t.alice, key, '{ viewer { account { id } } }', {});
    const again = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.B' });
    expect(query.headers.get('idempotent-replayed')).toBeNull();
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await ordersOf(t.alice, 'IDEM.B')).toBe(3);
  });

  it('refuses the same key with a different body with 422, and runs nothing', async () => {
    const key = freshKey();
    await send(t.alice, key, SUBMIT, { symbol: 'IDEM.C' });
    const other = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.D' });
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ detail: 'Idempotency-Key was used with a different request' });
    expect(await ordersOf(t.alice, 'IDEM.D')).toBe(0);
  });

  it('treats a repeat whose variables are in another order as the same request', async () => {
    const key = freshKey();
    const query = 'mutation($a: String!, $b: String) { createStrategy(input: { name: $a, description: $b }) { strategy { id } } }';
    const first = await send(t.alice, key, query, { a: `idem-order-${key}`, b: 'x' });
    const second = await send(t.alice, key, query, { b: 'x', a: `idem-order-${key}` });
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
  });

  it('treats no variables, null and {} as the same request', async () => {
    const key = freshKey();
    const query = `mutation { createStrategy(input: { name: "idem-empty-${key}" }) { strategy { id } } }`;
    const headers = { 'content-type': 'application/json', 'x-api-key': t.alice.apiKey, 'idempotency-key': key };
    const first = await t.stack.post(JSON.stringify({ query }), headers);
    for (const variables of [null, {}]) {
      const repeat = await t.stack.post(JSON.stringify({ query, variables }), headers);
      expect(repeat.headers.get('idempotent-replayed')).toBe('true');
      expect(repeat.body).toEqual(first.body);
    }
  });

  it('keeps keys per account: the same key from another account runs for that account', async () => {
    const key = freshKey();
    await send(t.alice, key, SUBMIT, { symbol: 'IDEM.E' });
    const bobs = await send(t.bob, key, SUBMIT, { symbol: 'IDEM.E' });
    expect(bobs.headers.get('idempotent-replayed')).toBeNull();
    expect(bobs.body.data.submitOrder.orderSubmission).not.toBeNull();
    expect(await ordersOf(t.bob, 'IDEM.E')).toBe(1);
  });

  it('refuses a key that is not 1 to 255 printable ASCII characters with 400', async () => {
    for (const key of ['x'.repeat(256), 'tab\there']) {
      const result = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.F' });
      expect(result.status).toBe(400);
    }
    expect(await ordersOf(t.alice, 'IDEM.F')).toBe(0);
  });

  it('runs one of many concurrent requests with one key, on two replicas: the others get 409 or the replay', async () => {
    const replica = await startReplica();
    const key = freshKey();
    const name = `idem-concurrent-${key}`;
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(t.alice, key, CREATE_STRATEGY, { name }, i % 2 === 0 ? t.stack.gatewayUrl : replica.gateway.url)),
    );
    const ran = results.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
    expect(ran).toHaveLength(1);
    for (const result of results) {
      if (result.status === 409) expect(result.body).toEqual({ detail: 'A request with this Idempotency-Key is in progress' });
      else expect(result.body).toEqual(ran[0]!.body);
    }
    expect(ran[0]!.body.data.createStrategy.error).toBeNull();
    const strategies = await t.alice.data('{ listStrategies(first: 200) { nodes { name } } }');
    expect(strategies.listStrategies.nodes.filter((s: { name: string }) => s.name === name)).toHaveLength(1);
  });

  it('remembers an answer across a gateway restart', async () => {
    const before = await startReplica();
    const key = freshKey();
    const first = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.G' }, before.gateway.url);
    await stopReplica(before);
    const after = await startReplica();
    const repeat = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.G' }, after.gateway.url);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body).toEqual(first.body);
    expect(await ordersOf(t.alice, 'IDEM.G')).toBe(1);
  });

  it('does not keep the answer of an outage: the retry with the same key runs once the service is back', async () => {
    const key = freshKey();
    await t.stack.stopService('orders');
    let down: HttpResult;
    try {
      down = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.H' });
    } finally {
      await t.stack.startService('orders');
    }
    expect(down.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    const retried = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.H' });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.data.submitOrder.orderSubmission.symbol).toBe('IDEM.H');
    expect(await ordersOf(t.alice, 'IDEM.H')).toBe(1);
  });

  it('does not keep an outage beside a root field the client skipped: that field ran nothing either', async () => {
    const key = freshKey();
    const withSkipped = SUBMIT.replace(/^mutation Submit\(\$symbol: String!\) \{/, 'mutation Submit($symbol: String!, $also: Boolean!) {\n  createStrategy(input: { name: "Skipped" }) @include(if: $also) { strategy { id } }');
    expect(withSkipped).not.toBe(SUBMIT);
    await t.stack.stopService('orders');
    let down: HttpResult;
    try {
      down = await send(t.alice, key, withSkipped, { symbol: 'IDEM.K', also: false });
    } finally {
      await t.stack.startService('orders');
    }
    expect(down.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
      [['submitOrder'], 'SERVICE_UNAVAILABLE'],
    ]);
    const retried = await send(t.alice, key, withSkipped, { symbol: 'IDEM.K', also: false });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.data.submitOrder.orderSubmission.symbol).toBe('IDEM.K');
    expect(await ordersOf(t.alice, 'IDEM.K')).toBe(1);
  });

  it('keeps a partial answer: an order committed while the fills service was down is replayed, not submitted again', async () => {
    const key = freshKey();
    const query = `mutation Partial($symbol: String!) {
      submitOrder(input: { symbol: $symbol, side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id fills { id } } error { code } }
    }`;
    const first = await whileDown('fills', () => send(t.alice, key, query, { symbol: 'IDEM.P' }));
    expect(first.status).toBe(200);
    expect(first.body.data.submitOrder).not.toBeNull();
    expect(first.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toContain('SERVICE_UNAVAILABLE');
    expect(await ordersOf(t.alice, 'IDEM.P')).toBe(1);

    const retried = await send(t.alice, key, query, { symbol: 'IDEM.P' });
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toEqual(first.body);
    expect(await ordersOf(t.alice, 'IDEM.P')).toBe(1);
  });

  it('keeps an answer whose root field another service\'s outage nulled, though the change committed', async () => {
    await send(t.alice, undefined, SUBMIT, { symbol: 'IDEM.N' });
    const key = freshKey();
    const query = 'mutation { cancelOrderSubmissions(filter: { symbol: "IDEM.N" }) { cancelledCount orderSubmissions { id fills { id } } error { code } } }';
    const first = await whileDown('fills', () => send(t.alice, key, query, {}));
    // The order's non-null fills, lost with the fills service, null the whole answer.
    expect(first.body.data).toBeNull();
    expect((await t.alice.listAllOrders({ filter: { symbol: 'IDEM.N' } }))[0]!.status).toBe('CANCELLED');
    const retried = await send(t.alice, key, query, {});
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toEqual(first.body);
  });

  it('keeps the answer of two root fields of which one ran before the other\'s service was found down', async () => {
    const key = freshKey();
    const name = `idem-both-${key}`;
    const query = `mutation Both($name: String!, $symbol: String!) {
      createStrategy(input: { name: $name }) { strategy { id } error { code } }
      submitOrder(input: { symbol: $symbol, side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id } error { code } }
    }`;
    const first = await whileDown('orders', () => send(t.alice, key, query, { name, symbol: 'IDEM.Q' }));
    expect(first.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toContain('SERVICE_UNAVAILABLE');
    expect(await strategiesNamed(t.alice, name)).toBe(1);

    const retried = await send(t.alice, key, query, { name, symbol: 'IDEM.Q' });
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toEqual(first.body);
    expect(await ordersOf(t.alice, 'IDEM.Q')).toBe(0);
  });

  it('keeps an answer whose data merely mentions an outage code', async () => {
    const key = freshKey();
    const name = `idem-text-${key}`;
    const query = 'mutation($name: String!, $d: String) { createStrategy(input: { name: $name, description: $d }) { strategy { id description } error { code } } }';
    const first = await send(t.alice, key, query, { name, d: 'TEMPORARILY_UNAVAILABLE' });
    expect(first.body.data.createStrategy.strategy.description).toBe('TEMPORARILY_UNAVAILABLE');
    const retried = await send(t.alice, key, query, { name, d: 'TEMPORARILY_UNAVAILABLE' });
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body).toEqual(first.body);
    expect(await strategiesNamed(t.alice, name)).toBe(1);
  });

  it('does not keep a payload that is only TEMPORARILY_UNAVAILABLE: the retry runs once the dependency is back', async () => {
    const strategy = await t.alice.createdStrategy(`idem-dependency-${process.pid}`);
    const key = freshKey();
    // `__typename` beside it runs nothing, and says nothing of whether the mutation ran.
    const query = 'mutation($s: ID!) { __typename submitOrder(input: { symbol: "IDEM.R", side: BUY, type: MARKET, quantity: "1", strategyId: $s }) { orderSubmission { id } error { code } } }';
    const down = await whileDown('strategies', () => send(t.alice, key, query, { s: strategy.id }));
    expect(down.body.data.submitOrder).toMatchObject({ orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE' } });
    const retried = await send(t.alice, key, query, { s: strategy.id });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.data.submitOrder.error).toBeNull();
    expect(await ordersOf(t.alice, 'IDEM.R')).toBe(1);
  });

  it('replays an answer only to a key that may make the request: a read-only key of the account gets FORBIDDEN', async () => {
    const { apiKey: readOnly } = await createKey(t.stack.operator, { accountId: t.alice.accountId, scopes: ['read'] });
    const { apiKey: fullAccess } = await createKey(t.stack.operator, { accountId: t.alice.accountId });
    const reader = { apiKey: readOnly } as ApiClient;
    const key = freshKey();
    const variables = { name: `idem-scope-${key}` };
    const unreplayed = await send(reader, undefined, CREATE_STRATEGY, variables);
    expect(unreplayed.body.errors[0].extensions.code).toBe('FORBIDDEN');

    const first = await send(t.alice, key, CREATE_STRATEGY, variables);
    expect(first.body.data.createStrategy.strategy).not.toBeNull();
    const refused = await send(reader, key, CREATE_STRATEGY, variables);
    expect(refused.status).toBe(unreplayed.status);
    expect(refused.headers.get('idempotent-replayed')).toBeNull();
    expect(refused.body).toEqual(unreplayed.body);
    // Another key of the account that may make it (after a roll, say) is still replayed.
    const other = await send({ apiKey: fullAccess } as ApiClient, key, CREATE_STRATEGY, variables);
    expect(other.headers.get('idempotent-replayed')).toBe('true');
    expect(other.body).toEqual(first.body);
  });

  it('does not keep a refusal for lack of scope: the account\'s key that may make the request runs it', async () => {
    const { apiKey: readOnly } = await createKey(t.stack.operator, { accountId: t.alice.accountId, scopes: ['read'] });
    const key = freshKey();
    const refused = await send({ apiKey: readOnly } as ApiClient, key, SUBMIT, { symbol: 'IDEM.S' });
    expect(refused.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const ran = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.S' });
    expect(ran.headers.get('idempotent-replayed')).toBeNull();
    expect(ran.body.data.submitOrder.orderSubmission.symbol).toBe('IDEM.S');
    expect(await ordersOf(t.alice, 'IDEM.S')).toBe(1);
  });

  it('answers the retries of a mutation that outlived the gateway timeout with its own late answer, running it once', async () => {
    const relay = await slowRelay(t.stack.urls.strategies, 1_500);
    const config = t.stack.config;
    const gateway = await t.stack.anotherGateway({
      config: { limits: { ...config.limits, gatewayTimeoutMs: 500 }, subgraphUrls: { ...config.subgraphUrls, strategies: relay.url } },
    });
    try {
      const key = freshKey();
      const variables = { name: `idem-late-${key}` };
      const timedOut = await send(t.alice, key, CREATE_STRATEGY, variables, gateway.url);
      expect(timedOut.status).toBe(504);
      const meanwhile = await send(t.alice, key, CREATE_STRATEGY, variables, gateway.url);
      expect(meanwhile.status).toBe(409);
      await expect.poll(async () => (await send(t.alice, key, CREATE_STRATEGY, variables)).status, { timeout: 20_000, interval: 200 }).toBe(200);
      const replayed = await send(t.alice, key, CREATE_STRATEGY, variables);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(replayed.body.data.createStrategy).toMatchObject({ strategy: { id: expect.any(String) }, error: null });
      expect(await strategiesNamed(t.alice, variables.name)).toBe(1);
    } finally {
      await gateway.close();
      await relay.close();
    }
  });

  it('keeps a claim whose request still runs in progress past its first lease, while the gateway renews it', async () => {
    const store = new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { leaseMs: 1_000 });
    const hash = Buffer.alloc(32, 3);
    const now = new Date();
    const key = freshKey();
    expect(await store.claim(t.alice.accountId, key, hash, now, INTERRUPTED)).toEqual({ kind: 'claimed' });
    await store.renewLease(t.alice.accountId, key, new Date(now.getTime() + 800));
    expect(await store.claim(t.alice.accountId, key, hash, new Date(now.getTime() + 1_500), INTERRUPTED)).toEqual({ kind: 'in-progress' });
    expect(await store.claim(t.alice.accountId, key, hash, new Date(now.getTime() + 2_000), INTERRUPTED)).toEqual({ kind: 'replay', answer: INTERRUPTED });
  });

  it('forgets a key after 24 hours, and gives a claim abandoned past its lease the interrupted answer, which it keeps', async () => {
    const store = new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { leaseMs: 1_000 });
    const hash = Buffer.alloc(32, 1);
    const other = Buffer.alloc(32, 2);
    const now = new Date();
    const key = freshKey();
    expect(await store.claim(t.alice.accountId, key, hash, now, INTERRUPTED)).toEqual({ kind: 'claimed' });
    expect(await store.claim(t.alice.accountId, key, hash, now, INTERRUPTED)).toEqual({ kind: 'in-progress' });
    const afterLease = new Date(now.getTime() + 2_000);
    expect(await store.claim(t.alice.accountId, key, other, afterLease, INTERRUPTED)).toEqual({ kind: 'different-request' });
    expect(await store.claim(t.alice.accountId, key, hash, afterLease, INTERRUPTED)).toEqual({ kind: 'replay', answer: INTERRUPTED });
    // The gateway that held the claim was only slow: its answer comes too late to replace the one kept.
    await store.complete(t.alice.accountId, key, { status: 200, contentType: 'application/json', body: '{}' });
    expect(await store.claim(t.alice.accountId, key, hash, afterLease, INTERRUPTED)).toEqual({ kind: 'replay', answer: INTERRUPTED });
    expect(await store.claim(t.alice.accountId, key, other, afterLease, INTERRUPTED)).toEqual({ kind: 'different-request' });
    const nextDay = new Date(now.getTime() + 24 * 60 * 60 * 1000 + 1);
    expect(await store.claim(t.alice.accountId, key, other, nextDay, INTERRUPTED)).toEqual({ kind: 'claimed' });
    const later = new Date(nextDay.getTime() + 24 * 60 * 60 * 1000 + 1);
    expect(await store.purgeExpired(later)).toBeGreaterThanOrEqual(1);
  });

  it('answers the repeats of a request whose gateway died that it may have run, on another replica, and runs nothing', async () => {
    // The gateway that takes the request dies while it runs: it neither renews its claim nor answers.
    const dying = new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { leaseMs: 600 });
    dying.renewLease = async () => {};
    let died = () => {};
    const dead = new Promise<unknown>((resolve) => (died = () => resolve(createdStrategy)));
    let reached = () => {};
    const ran = new Promise<void>((resolve) => (reached = resolve));
    const first = await harness({ store: dying, run: () => (reached(), dead) });
    const second = await harness({
      store: new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { leaseMs: 600 }),
      run: async () => createdStrategy,
    });
    const key = freshKey();
    const lost = send(t.alice, key, CREATE_STRATEGY, {}, first.url);
    try {
      await ran;
      expect((await send(t.alice, key, CREATE_STRATEGY, {}, second.url)).status).toBe(409);
      await sleep(1_000);
      for (let repeat = 0; repeat < 2; repeat += 1) {
        const retried = await send(t.alice, key, CREATE_STRATEGY, {}, second.url);
        expect(retried.status).toBe(200);
        expect(retried.headers.get('idempotent-replayed')).toBe('true');
        expect(retried.body).toEqual({
          data: null,
          errors: [{ message: expect.stringContaining('may have run'), path: ['createStrategy'], extensions: { code: 'SERVICE_UNAVAILABLE' } }],
        });
      }
      expect(second.runs()).toBe(0);
    } finally {
      died();
      await lost.catch(() => undefined);
      await first.close();
      await second.close();
    }
  });

  it('keeps the answer of a subgraph that timed out after it got the mutation: retries are replayed it, and it runs once', async () => {
    const relay = await slowRelay(t.stack.urls.strategies, 1_000);
    const config = t.stack.config;
    const gateway = await t.stack.anotherGateway({
      config: { limits: { ...config.limits, subgraphTimeoutMs: 300 }, subgraphUrls: { ...config.subgraphUrls, strategies: relay.url } },
    });
    try {
      const key = freshKey();
      const variables = { name: `idem-subgraph-timeout-${key}` };
      const first = await send(t.alice, key, CREATE_STRATEGY, variables, gateway.url);
      expect(first.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
      const retried = await send(t.alice, key, CREATE_STRATEGY, variables, gateway.url);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(retried.status).toBe(first.status);
      expect(retried.body).toEqual(first.body);
      // The subgraph commits after the gateway gave up; its retries still get the outage, and run nothing.
      await expect.poll(() => strategiesNamed(t.alice, variables.name), { timeout: 20_000, interval: 200 }).toBe(1);
      expect((await send(t.alice, key, CREATE_STRATEGY, variables, gateway.url)).body).toEqual(first.body);
      await sleep(500);
      expect(await strategiesNamed(t.alice, variables.name)).toBe(1);
    } finally {
      await gateway.close();
      await relay.close();
    }
  });

  it('keeps the answer of a mutation that may have run: a retry past the claim\'s lease is replayed it and runs nothing', async () => {
    const mayHaveRun = { data: { createStrategy: null }, errors: [{ message: 'down', path: ['createStrategy'], extensions: { code: 'SERVICE_UNAVAILABLE' } }] };
    const app = await harness({
      store: new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { leaseMs: 600 }),
      run: async (context, run) => {
        if (run > 1) return createdStrategy;
        context.unavailableServices.add('strategies');
        context.servicesThatMayHaveRun.add('strategies');
        return mayHaveRun;
      },
    });
    try {
      const key = freshKey();
      expect((await send(t.alice, key, CREATE_STRATEGY, {}, app.url)).body).toEqual(mayHaveRun);
      await sleep(1_000);
      const retried = await send(t.alice, key, CREATE_STRATEGY, {}, app.url);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(retried.body).toEqual(mayHaveRun);
      expect(app.runs()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it("keeps the outage payload of a write whose database connection broke while it committed: the retry is replayed it and runs nothing", async () => {
    const database = new URL(t.stack.databaseUrl);
    const admin = new pg.Client({ connectionString: t.stack.databaseUrl });
    await admin.connect();
    // A commit that takes a second (a deferred trigger), during which the connection is cut: Postgres
    // commits all the same, and the service's driver only sees the connection end.
    await admin.query(`create function strategies.slow_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(1); return null; end $$`);
    await admin.query(`create constraint trigger slow_commit after insert on strategies.strategies deferrable initially deferred
      for each row when (new.name like 'Cut while committing%') execute function strategies.slow_commit()`);
    const proxy = new TcpProxy(database.hostname, Number(database.port || 5432));
    await proxy.start();
    const proxied = Object.assign(new URL(t.stack.databaseUrl), { hostname: '127.0.0.1', port: String(proxy.port) });
    const logger = createLogger('cut-commit', 'silent');
    const strategies = await runService(strategiesService, { config: { ...t.stack.config, databaseUrl: proxied.toString() }, port: 0, logger });
    let gateway: RunningServer | undefined;
    try {
      gateway = await t.stack.anotherGateway({ config: { subgraphUrls: { ...t.stack.config.subgraphUrls, strategies: strategies.url } }, logger });
      const key = freshKey();
      const name = `Cut while committing ${key}`;
      const first = send(t.alice, key, CREATE_STRATEGY, { name }, gateway.url);
      const sleeping = async () => Number((await admin.query(`select count(*) from pg_stat_activity where wait_event = 'PgSleep' and datname = current_database()`)).rows[0].count);
      await expect.poll(sleeping, { timeout: 10_000, interval: 20 }).toBe(1);
      await proxy.cut();
      const answered = await first;
      expect(answered.body).toEqual({ data: { createStrategy: { strategy: null, error: { code: 'TEMPORARILY_UNAVAILABLE' } } } });
      await proxy.restore();
      // The commit went through: the strategy exists, once.
      await expect.poll(() => strategiesNamed(t.alice, name), { timeout: 10_000 }).toBe(1);
      const retried = await send(t.alice, key, CREATE_STRATEGY, { name }, gateway.url);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      expect(retried.body).toEqual(answered.body);
      expect(await strategiesNamed(t.alice, name)).toBe(1);
    } finally {
      await gateway?.close();
      await strategies.close();
      await proxy.cut();
      await admin.query('drop trigger slow_commit on strategies.strategies');
      await admin.query('drop function strategies.slow_commit()');
      await admin.end();
    }
  });

  it('releases a claim taken while the 504 went out: the handler never ran, so the retry runs', async () => {
    const store = new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret);
    const claim = store.claim.bind(store);
    let claims = 0;
    store.claim = async (...args) => {
      claims += 1;
      if (claims === 1) await sleep(400);
      return claim(...args);
    };
    const app = await harness({ store, gatewayTimeoutMs: 200, run: async () => createdStrategy });
    try {
      const key = freshKey();
      expect((await send(t.alice, key, CREATE_STRATEGY, {}, app.url)).status).toBe(504);
      await sleep(400);
      const retried = await send(t.alice, key, CREATE_STRATEGY, {}, app.url);
      expect(retried.status).toBe(200);
      expect(retried.body).toEqual(createdStrategy);
      expect(app.runs()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('keeps the late answer of a handler that ends while the 504 is on its way', async () => {
    const app = await harness({
      store: new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret),
      gatewayTimeoutMs: 200,
      run: async () => {
        await sleep(300);
        return createdStrategy;
      },
      // An earlier onSend hook that takes its time over the 504: the handler ends before the 504 reaches the idempotency hook.
      beforeIdempotency: (routes) =>
        routes.addHook('onSend', async (_request, reply, payload) => {
          if (reply.statusCode === 504) await sleep(300);
          return payload;
        }),
    });
    try {
      const key = freshKey();
      expect((await send(t.alice, key, CREATE_STRATEGY, {}, app.url)).status).toBe(504);
      const replayed = await send(t.alice, key, CREATE_STRATEGY, {}, app.url);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(replayed.body).toEqual(createdStrategy);
      expect(app.runs()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('keeps trying to keep an answer that failed to be stored, renewing its claim: the repeat is replayed, not run again', async () => {
    const store = new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { leaseMs: 600 });
    const complete = store.complete.bind(store);
    let failures = 0;
    store.complete = async (...args) => {
      if (failures < 3) {
        failures += 1;
        throw new Error('the database is briefly unreachable');
      }
      return complete(...args);
    };
    const app = await harness({ store, run: async () => createdStrategy });
    try {
      const key = freshKey();
      expect((await send(t.alice, key, CREATE_STRATEGY, {}, app.url)).body).toEqual(createdStrategy);
      expect((await send(t.alice, key, CREATE_STRATEGY, {}, app.url)).status).toBe(409);
      await expect.poll(async () => (await send(t.alice, key, CREATE_STRATEGY, {}, app.url)).status, { timeout: 20_000, interval: 100 }).toBe(200);
      const replayed = await send(t.alice, key, CREATE_STRATEGY, {}, app.url);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(app.runs()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('refuses variables nested deeper than any input with 400 BAD_REQUEST, not a 500', async () => {
    const depth = 40_000;
    const body = `{"query": ${JSON.stringify(CREATE_STRATEGY)}, "variables": {"name": ${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    const refused = await t.stack.post(body, { 'content-type': 'application/json', 'x-api-key': t.alice.apiKey, 'idempotency-key': freshKey() });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      data: null,
      errors: [{ message: 'The variables nest deeper than 100 levels', path: ['createStrategy'], extensions: { code: 'BAD_REQUEST' } }],
    });
  });

  it('purges expired keys in batches, passing over those another purge holds', async () => {
    const store = new IdempotencyStore(t.stack.running.keys.db, t.stack.config.apiKeyHmacSecret, { purgeBatch: 2 });
    const twoDaysAgo = new Date(Date.now() - 48 * 60 * 60 * 1000);
    const keys = Array.from({ length: 5 }, () => freshKey());
    for (const key of keys) await store.claim(t.alice.accountId, key, Buffer.alloc(32, 4), twoDaysAgo, INTERRUPTED);
    const db = t.stack.running.keys.db;
    let unlock = () => {};
    const held = new Promise<void>((resolve) => (unlock = resolve));
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = db.transaction().execute(async (trx) => {
      await sql`select 1 from idempotency_keys where account_id = ${t.alice.accountId} and key = ${keys[0]} for update`.execute(trx);
      locked();
      await held;
    });
    try {
      await isLocked;
      const purged = await Promise.race([store.purgeExpired(new Date()), sleep(3_000).then(() => 'blocked')]);
      expect(purged).toBeGreaterThanOrEqual(4);
    } finally {
      unlock();
      await holder;
    }
    expect(await store.purgeExpired(new Date())).toBeGreaterThanOrEqual(1);
    expect(await store.claim(t.alice.accountId, keys[0]!, Buffer.alloc(32, 5), new Date(), INTERRUPTED)).toEqual({ kind: 'claimed' });
  });
});
