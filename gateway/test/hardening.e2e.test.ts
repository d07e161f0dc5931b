import { describe, expect, it } from 'vitest';
import { getIntrospectionQuery } from 'graphql';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createLogger } from '@ots/shared/logger';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { useStack } from '../../testing/fixture.ts';
import { EVENTS_SUBSCRIPTION, streamUrls } from '../../testing/streams.ts';
import { generateApiKey, openKeyStore } from '@ots/accounts';
import { startGateway } from '../src/server.ts';

const VIEWER = '{ viewer { account { id } } }';
const json = { 'content-type': 'application/json' };
const t = useStack({ env: { FAILED_AUTH_BURST: '3', FAILED_AUTH_PER_SECOND: '1' }, accounts: ['alice'] });

describe('answers that name nothing internal', () => {
  it('a key look-up whose database is unreachable is a 503 TEMPORARILY_UNAVAILABLE on each root field, not the driver error with its host and port', async () => {
    const config = { ...t.stack.config, databaseUrl: 'postgres://postgres@127.0.0.1:1/nowhere', redisUrl: undefined };
    const logger = createLogger('unreachable-db', 'silent');
    const keys = openKeyStore(config, logger, { listen: false });
    const gateway = await startGateway({ config, keyStore: keys.keyStore, logger, port: 0, isReady: async () => false });
    try {
      const query = '{ viewer { account { id } } mine: listOrderSubmissions { nodes { id } } }';
      const result = await t.stack.post(JSON.stringify({ query }), { ...json, 'x-api-key': t.alice.apiKey }, gateway.url);
      expect(result.status).toBe(503);
      expect(result.headers.get('retry-after')).toBe('1');
      const unavailable = { message: 'A service this request depends on is temporarily unavailable; retry', extensions: { code: 'TEMPORARILY_UNAVAILABLE' } };
      expect(result.body).toEqual({ data: null, errors: [{ ...unavailable, path: ['viewer'] }, { ...unavailable, path: ['mine'] }] });
    } finally {
      await gateway.close();
      await keys.close();
    }
  });

  it('a subgraph that is down is named only on the root fields it owns; a field legitimately null keeps no error', async () => {
    await t.stack.stopService('strategies');
    try {
      const result = await t.stack.graphql(
        t.alice.apiKey,
        '{ absent: orderSubmission(id: "01a20000-0000-7000-8000-000000000000") { id } strategy(id: "01a20000-0000-7000-8000-000000000000") { id } viewer { account { id } } }',
      );
      expect(result.status).toBe(200);
      expect(result.body.data.absent).toBeNull();
      expect(result.body.data.viewer.account.id).toBeTruthy();
      expect(result.body.errors.map((error: { path: string[] }) => error.path)).toEqual([['strategy']]);
      expect(result.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
      expect(JSON.stringify(result.body)).not.toMatch(/127\.0\.0\.1|localhost|ECONN/);
    } finally {
      await t.stack.startService('strategies');
    }
  });
});

/** A gateway whose key store reads Postgres through a relay the test cuts, with no Redis layer to answer for it. */
async function gatewayWithCuttableKeyStore(run: (gateway: RunningServer, keyDatabase: TcpProxy) => Promise<void>) {
  const database = new URL(t.stack.databaseUrl);
  const proxy = new TcpProxy(database.hostname, Number(database.port || 5432));
  await proxy.start();
  database.hostname = '127.0.0.1';
  database.port = String(proxy.port);
  const keys = openKeyStore({ ...t.stack.config, databaseUrl: database.toString(), redisUrl: undefined }, createLogger('cut-key-store', 'silent'), { listen: false });
  const gateway = await t.stack.anotherGateway({ keyStore: keys.keyStore });
  try {
    await run(gateway, proxy);
  } finally {
    await gateway.close();
    await keys.close();
    await proxy.cut();
  }
}

/** graphql-ws's own client, retrying as it does by default (every close but the ones it takes as fatal), with every close seen. */
function retryingWsClient(url: string, apiKey: string) {
  const closes: { code: number; reason: string }[] = [];
  let connections = 0;
  const client = createWsClient({
    url: streamUrls(url).ws,
    webSocketImpl: WebSocket,
    connectionParams: { 'X-API-Key': apiKey },
    lazy: false,
    retryAttempts: 1_000,
    retryWait: () => new Promise((resolve) => setTimeout(resolve, 100)),
    onNonLazyError: (error) => closes.push({ code: -1, reason: `gave up: ${String((error as { code?: number }).code ?? error)}` }),
    on: {
      connected: () => (connections += 1),
      closed: (event) => closes.push({ code: (event as { code: number }).code, reason: (event as { reason: string }).reason }),
    },
  });
  return { client, closes, connections: () => connections };
}

describe('a WebSocket whose key store is unreachable', () => {
  it('is closed 1013, which graphql-ws retries, never with the driver error as its reason, and connects once the database is back', async () => {
    await gatewayWithCuttableKeyStore(async (gateway, keyDatabase) => {
      await keyDatabase.cut();
      const ws = retryingWsClient(gateway.url, t.alice.apiKey);
      try {
        await expect.poll(() => ws.closes.length, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(2);
        await keyDatabase.restore();
        await expect.poll(() => ws.connections(), { timeout: 10_000, interval: 50 }).toBe(1);
        expect(ws.closes.length).toBeGreaterThanOrEqual(2);
        for (const close of ws.closes) {
          expect(close.code).toBe(1013);
          expect(close.reason).not.toMatch(/\d+\.\d+\.\d+\.\d+|localhost|:\d{2,5}|ECONN/);
        }
      } finally {
        await ws.client.dispose();
      }
    });
  });

  it('answers a subscribe on an open socket TEMPORARILY_UNAVAILABLE, and keeps the socket', async () => {
    await gatewayWithCuttableKeyStore(async (gateway, keyDatabase) => {
      const ws = retryingWsClient(gateway.url, t.alice.apiKey);
      try {
        await expect.poll(() => ws.connections(), { timeout: 10_000, interval: 50 }).toBe(1);
        await keyDatabase.cut();
        // Past the key store's in-process layer (1 s): the subscribe's look-up goes to Postgres.
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        const refused = await new Promise<unknown>((resolve) => {
          ws.client.subscribe({ query: EVENTS_SUBSCRIPTION }, { next: () => undefined, error: resolve, complete: () => resolve('completed') });
        });
        expect(refused).toEqual([expect.objectContaining({ message: expect.stringMatching(/temporarily unavailable/), extensions: { code: 'TEMPORARILY_UNAVAILABLE' } })]);
        expect(JSON.stringify(refused)).not.toMatch(/ECONN|:\d{2,5}/);
        expect(ws.closes).toEqual([]);
      } finally {
        await ws.client.dispose();
      }
    });
  });
});

describe('calls from a page of another origin (CORS_ORIGINS)', () => {
  const allowed = 'https://app.example.com';
  const preflight = (url: string, origin: string, requestHeaders: string) =>
    fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': requestHeaders } });
  const cors = (response: { headers: Headers }) =>
    Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'));

  it('an allowed origin: its preflights for /graphql and /graphql/stream are answered, and its requests may read what the SDK reads', async () => {
    const gateway = await t.stack.anotherGateway({ config: { corsOrigins: ['https://other.example', allowed] } });
    try {
      const graphql = await preflight(gateway.url, allowed, 'content-type,x-api-key,idempotency-key');
      expect(graphql.status).toBe(204);
      expect(cors(graphql)).toEqual({
        'access-control-allow-origin': allowed,
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': 'content-type, x-api-key, idempotency-key, last-event-id',
        'access-control-max-age': '600',
        vary: 'Origin',
      });
      const stream = await preflight(streamUrls(gateway.url).sse, allowed, 'content-type,x-api-key,last-event-id');
      expect(cors(stream)).toMatchObject({ 'access-control-allow-origin': allowed, 'access-control-allow-headers': expect.stringContaining('last-event-id') });

      const result = await t.stack.post(JSON.stringify({ query: VIEWER }), { ...json, origin: allowed, 'x-api-key': t.alice.apiKey }, gateway.url);
      expect(result.status).toBe(200);
      expect(result.body.data.viewer.account.id).toBe(t.alice.accountId);
      expect(cors(result)).toEqual({
        'access-control-allow-origin': allowed,
        'access-control-expose-headers': 'retry-after, idempotent-replayed, x-request-id, ratelimit, ratelimit-policy',
        vary: 'Origin',
      });
      // The stream's answer, written by hand past Fastify's reply, carries them too.
      const aborted = new AbortController();
      const streamed = await fetch(streamUrls(gateway.url).sse, {
        method: 'POST',
        headers: { ...json, accept: 'text/event-stream', origin: allowed, 'x-api-key': t.alice.apiKey },
        body: JSON.stringify({ query: EVENTS_SUBSCRIPTION }),
        signal: aborted.signal,
      });
      expect(streamed.status).toBe(200);
      expect(cors(streamed)).toMatchObject({ 'access-control-allow-origin': allowed, 'access-control-expose-headers': expect.stringContaining('retry-after') });
      aborted.abort();
      // The console stays same-origin.
      const consolePreflight = await preflight(new URL('/console/api/sign-in', gateway.url).toString(), allowed, 'content-type');
      expect(consolePreflight.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await gateway.close();
    }
  });

  it('another origin, or a gateway without CORS_ORIGINS, gets no Access-Control-Allow-* header', async () => {
    const gateway = await t.stack.anotherGateway({ config: { corsOrigins: [allowed] } });
    try {
      expect((await preflight(gateway.url, allowed, 'content-type,x-api-key')).headers.get('access-control-allow-origin')).toBe(allowed);
      for (const [url, origin] of [
        [gateway.url, 'https://evil.example'],
        [gateway.url, 'https://app.example.com.evil.example'],
        [t.stack.gatewayUrl, allowed],
      ] as const) {
        const refused = await preflight(url, origin, 'content-type,x-api-key');
        expect(refused.headers.get('access-control-allow-origin')).toBeNull();
        expect(refused.headers.get('access-control-allow-headers')).toBeNull();
        const result = await t.stack.post(JSON.stringify({ query: VIEWER }), { ...json, origin, 'x-api-key': t.alice.apiKey }, url);
        expect(result.status).toBe(200);
        expect(result.headers.get('access-control-allow-origin')).toBeNull();
        expect(result.headers.get('access-control-expose-headers')).toBeNull();
      }
    } finally {
      await gateway.close();
    }
  });
});

describe('the request around the document', () => {
  it('a text/plain body is refused with 415', async () => {
    const result = await t.stack.post(VIEWER, { 'content-type': 'text/plain', 'x-api-key': t.alice.apiKey });
    expect(result.status).toBe(415);
  });

  it('a body without a query gets a GraphQL-shaped 400', async () => {
    const result = await t.stack.post(JSON.stringify({ variables: {} }), { ...json, 'x-api-key': t.alice.apiKey });
    expect(result.status).toBe(400);
    expect(result.body).toEqual({ data: null, errors: [expect.objectContaining({ extensions: { code: 'BAD_REQUEST' } })] });
  });

  it("the gateway makes its own request id rather than adopting the client's", async () => {
    const result = await t.stack.post(JSON.stringify({ query: VIEWER }), { ...json, 'x-api-key': t.alice.apiKey, 'x-request-id': 'forged-id-1' });
    expect(result.status).toBe(200);
    expect(result.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('Variant A corners', () => {
  it('a root that selects only a missing fragment still gets one Authentication required error, named after the operation', async () => {
    const result = await t.stack.post(JSON.stringify({ query: 'query Mine { ...Missing }' }), json);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      data: null,
      errors: [{ message: 'Authentication required', path: ['Mine'], extensions: { code: 'UNAUTHENTICATED' } }],
    });
  });

  it('in production over plain HTTP, a request without a key still gets Variant A', async () => {
    const gateway = await t.stack.anotherGateway({ config: { production: true } });
    try {
      const result = await t.stack.post(JSON.stringify({ query: VIEWER }), json, gateway.url);
      expect(result.status).toBe(200);
      expect(result.body.errors[0].message).toBe('Authentication required');
    } finally {
      await gateway.close();
    }
  });

  it('in production, introspection works with a valid key', async () => {
    const gateway = await t.stack.anotherGateway({ config: { production: true, trustProxy: ['loopback'] } });
    try {
      const headers = { ...json, 'x-api-key': t.alice.apiKey, 'x-forwarded-proto': 'https' };
      const result = await t.stack.post(JSON.stringify({ query: getIntrospectionQuery() }), headers, gateway.url);
      expect(result.status, JSON.stringify(result.body)).toBe(200);
      expect(result.body.data.__schema.queryType.name).toBe('Query');
    } finally {
      await gateway.close();
    }
  });
});

describe('an outage below a root field', () => {
  it("orders down: a strategy's orderSubmissions cannot be null, so the strategy is, and the error names it", async () => {
    const { apiKey: owner } = await t.stack.createAccountWithKey('Outage below the root');
    const created = await t.stack.graphql(owner, 'mutation { createStrategy(input: { name: "Momentum" }) { strategy { id } } }');
    const strategyId = created.body.data.createStrategy.strategy.id;
    await t.stack.stopService('orders');
    try {
      const result = await t.stack.graphql(owner, `{ viewer { account { id } } strategy(id: "${strategyId}") { name orderSubmissions { nodes { id } } } }`);
      expect(result.body.data.viewer.account.id).toBeTruthy();
      expect(result.body.data.strategy).toBeNull();
      expect(result.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
        [['strategy'], 'SERVICE_UNAVAILABLE'],
      ]);
    } finally {
      await t.stack.startService('orders');
    }
  });
});

describe('a mutation across subgraphs, one of them down', () => {
  it("the write that committed is answered beside the down subgraph's error, so that no client places it again", async () => {
    const { apiKey: owner } = await t.stack.createAccountWithKey('Mutation across an outage');
    await t.stack.stopService('strategies');
    try {
      const result = await t.stack.graphql(
        owner,
        `mutation {
          placed: submitOrder(input: { symbol: "MSFT", side: BUY, type: MARKET, quantity: "2" }) { orderSubmission { id quantity } error { code } }
          createStrategy(input: { name: "Breakout" }) { strategy { id } }
        }`,
      );
      expect(result.status).toBe(200);
      expect(result.body.data.placed).toEqual({ orderSubmission: { id: expect.any(String), quantity: '2' }, error: null });
      expect(result.body.data.createStrategy).toBeNull();
      expect(result.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
        [['createStrategy'], 'SERVICE_UNAVAILABLE'],
      ]);
      const book = await t.stack.graphql(owner, '{ listOrderSubmissions { nodes { id } } }');
      expect(book.body.data.listOrderSubmissions.nodes).toEqual([{ id: result.body.data.placed.orderSubmission.id }]);
    } finally {
      await t.stack.startService('strategies');
    }
  });

  it("runs nothing the client skipped: a root field under @skip or @include stays unrun, and an answer without errors has no errors", async () => {
    const { apiKey: owner } = await t.stack.createAccountWithKey('Skipped across subgraphs');
    const result = await t.stack.graphql(
      owner,
      `mutation Place($dry: Boolean!) {
        ... @skip(if: $dry) { submitOrder(input: { symbol: "MSFT", side: BUY, type: MARKET, quantity: "2" }) { orderSubmission { id } } }
        ...Placing @include(if: false)
        createStrategy(input: { name: "Dry run" }) { strategy { name } }
      }
      fragment Placing on Mutation { placed: submitOrder(input: { symbol: "MSFT", side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id } } }`,
      { dry: true },
    );
    expect(result.body).toEqual({ data: { createStrategy: { strategy: { name: 'Dry run' } } } });
    const book = await t.stack.graphql(owner, '{ listOrderSubmissions { nodes { id } } }');
    expect(book.body.data.listOrderSubmissions.nodes).toEqual([]);
  });

  it('a query run again around a down subgraph leaves out what the client skipped', async () => {
    const { apiKey: owner } = await t.stack.createAccountWithKey('Skipped around an outage');
    await t.stack.stopService('strategies');
    try {
      const result = await t.stack.graphql(
        owner,
        'query ($all: Boolean!) { viewer { account { id } } ... @include(if: $all) { listOrderSubmissions { nodes { id } } } listStrategies { nodes { id } } }',
        { all: false },
      );
      expect(Object.keys(result.body.data)).toEqual(['viewer', 'listStrategies']);
      expect(result.body.data.listStrategies).toBeNull();
      // Nor is a skipped field named by the outage's error.
      const skippedToo = await t.stack.graphql(
        owner,
        'query ($all: Boolean!) { viewer { account { id } } listStrategies { nodes { id } } again: listStrategies @include(if: $all) { nodes { id } } }',
        { all: false },
      );
      expect(Object.keys(skippedToo.body.data)).toEqual(['viewer', 'listStrategies']);
      expect(skippedToo.body.errors.map((error: { path: string[] }) => error.path)).toEqual([['listStrategies']]);
    } finally {
      await t.stack.startService('strategies');
    }
  });
});

// Last: it leaves this address over its failure limit (valid keys still pass: failed-auth.e2e).
describe('failed authentications per client address', () => {
  it('an address over its limit gets 429 for new guesses, while a key the caches know still works from it', async () => {
    const { apiKey: known } = await t.stack.createAccountWithKey('Shares an address');
    expect((await t.stack.graphql(known, VIEWER)).status).toBe(200);
    const guesses = [];
    for (let i = 0; i < 4; i += 1) guesses.push((await t.stack.graphql(generateApiKey(), VIEWER)).status);
    expect(guesses).toEqual([401, 401, 401, 429]);
    expect((await t.stack.graphql(generateApiKey(), VIEWER)).status).toBe(429);
    expect((await t.stack.graphql(known, VIEWER)).status).toBe(200);
  });
});
