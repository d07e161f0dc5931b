import net from 'node:net';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { SERVICE_NAMES, type Config } from '@ots/shared/config';
import { useStack } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';
import { generateApiKey } from '@ots/accounts';
import { doublingFragments } from '@ots/shared/testing/doubling-fragments';

const ORDER_FIELDS =
  'id clientOrderId symbol side type timeInForce quantity limitPrice stopPrice status filledQuantity remainingQuantity averageFillPrice submittedAt updatedAt cancelledAt';
const FILL_FIELDS = 'id executionId symbol side quantity price fee liquidity executedAt recordedAt';
const STRATEGY_FIELDS = 'id name description status createdAt updatedAt';
const FULL_PAGE = `listOrderSubmissions(first: 200) {
  nodes { ${ORDER_FIELDS} strategy { ${STRATEGY_FIELDS} } fills { ${FILL_FIELDS} } }
  pageInfo { hasNextPage endCursor }
}`;

/** No stack trace, SQL or internal address in anything a client is sent. */
function expectNothingInternal(body: unknown, ...alsoAbsent: string[]) {
  const text = JSON.stringify(body);
  for (const pattern of [/127\.0\.0\.1/, /localhost/i, /ECONNREFUSED/, /\bat .*\.(ts|js):\d+/, /stacktrace/i, /node_modules/, /\bselect\b.*\bfrom\b/i, /postgres/i, /kysely/i]) {
    expect(text).not.toMatch(pattern);
  }
  for (const absent of alsoAbsent) expect(text).not.toContain(absent);
}

/** A 400 top-level error answered before execution: no data at all. */
/** Refused before anything runs, with the code the error reference gives: QUERY_TOO_COMPLEX, or GRAPHQL_PARSE_FAILED for the token limit. */
function expectRefusedBeforeExecution(result: HttpResult, message: RegExp, code = 'QUERY_TOO_COMPLEX') {
  expect(result.status).toBe(400);
  expect(result.body.data ?? null).toBeNull();
  expect(result.body.errors.length).toBeGreaterThanOrEqual(1);
  for (const error of result.body.errors) {
    expect(error.message).toMatch(message);
    expect(error.extensions.code).toBe(code);
  }
  expectNothingInternal(result.body);
}

describe('with the default limits', () => {
  const t = useStack({ accounts: ['limits'] });

  const json = (body: string, key: string | undefined = t.limits.apiKey) =>
    t.stack.post(body, { 'content-type': 'application/json', ...(key === undefined ? {} : { 'x-api-key': key }) });

  describe('the request body', () => {
    it('over 100 KiB is refused with 413, with or without a key', async () => {
      const body = JSON.stringify({ query: '{ viewer { account { id } } }', variables: { pad: 'x'.repeat(101 * 1024) } });
      expect((await json(body)).status).toBe(413);
      expect((await json(body, undefined)).status).toBe(413);
    });

    it('just under 100 KiB is served', async () => {
      const body = JSON.stringify({ query: '{ viewer { account { id } } }', variables: { pad: 'x'.repeat(99 * 1024) } });
      expect(body.length).toBeLessThan(100 * 1024);
      const result = await json(body);
      expect(result.status).toBe(200);
      expect(result.body.data.viewer.account.id).toBeTruthy();
    });

    it('a JSON array (batching) is refused with 400, with or without a key', async () => {
      const batch = JSON.stringify([{ query: '{ viewer { account { id } } }' }, { query: '{ viewer { apiKey { id } } }' }]);
      for (const result of [await json(batch), await json(batch, undefined)]) {
        expect(result.status).toBe(400);
        expect(result.body).not.toHaveProperty('data');
        expect(Array.isArray(result.body)).toBe(false);
      }
    });

    it('a body that is not JSON is refused with 400', async () => {
      for (const body of ['{"query": "{ viewer { account { id } } }"', 'query { viewer { account { id } } }', '']) {
        const result = await json(body);
        expect(result.status, body).toBe(400);
        expect(result.body.data ?? null).toBeNull();
      }
    });

    it('JSON that is not an object with a string query is refused with 400', async () => {
      for (const body of ['null', '"{ viewer { account { id } } }"', '42', '{}', '{"query": 1}', '{"query": ""}']) {
        const result = await json(body);
        expect(result.status, body).toBe(400);
        expect(result.body.data ?? null).toBeNull();
      }
    });

    it('a content type other than JSON is refused (400/415) and never executed', async () => {
      const body = JSON.stringify({ query: '{ viewer { account { id } } }' });
      for (const contentType of ['application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const result = await t.stack.post(body, { 'content-type': contentType, 'x-api-key': t.limits.apiKey });
        expect(result.status, contentType).toBe(415);
        expect(result.body).toEqual({ detail: 'Unsupported Media Type: send a JSON body with the header Content-Type: application/json' });
      }
      // text/plain is what a cross-site form can send: it must not run either.
      for (const headers of [{ 'content-type': 'text/plain' }, {}] as Record<string, string>[]) {
        const result = await t.stack.post(body, { ...headers, 'x-api-key': t.limits.apiKey });
        expect([400, 415]).toContain(result.status);
        expect(JSON.stringify(result.body)).not.toContain('"viewer"');
      }
    });
  });

  describe('the document, checked before execution', () => {
    // listOrderSubmissions > nodes > strategy > orderSubmissions > nodes > strategy > orderSubmissions > nodes > fills > orderSubmission > id
    const depth11 = '{ listOrderSubmissions(first: 1) { nodes { strategy { orderSubmissions(first: 1) { nodes { strategy { orderSubmissions(first: 1) { nodes { fills { orderSubmission { id } } } } } } } } } } }';
    const depth10 = '{ listOrderSubmissions(first: 1) { nodes { strategy { orderSubmissions(first: 1) { nodes { strategy { orderSubmissions(first: 1) { nodes { fills { id } } } } } } } } } }';

    it('depth 10 is served, depth 11 is a top-level error with status 400', async () => {
      const ok = await t.stack.graphql(t.limits.apiKey, depth10);
      expect(ok.body.errors).toBeUndefined();
      expect(ok.status).toBe(200);
      expectRefusedBeforeExecution(await t.stack.graphql(t.limits.apiKey, depth11), /depth/i);
    });

    it('15 aliases are served, 16 are a top-level error with status 400', async () => {
      const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: viewer { account { id } }`).join(' ')} }`;
      const ok = await t.stack.graphql(t.limits.apiKey, aliased(15));
      expect(ok.status).toBe(200);
      expect(Object.keys(ok.body.data)).toHaveLength(15);
      expectRefusedBeforeExecution(await t.stack.graphql(t.limits.apiKey, aliased(16)), /alias/i);
    });

    it('listOrderSubmissions(first: 200) with strategy and fills is served', async () => {
      const result = await t.stack.graphql(t.limits.apiKey, `{ ${FULL_PAGE} }`);
      expect(result.body.errors).toBeUndefined();
      expect(result.status).toBe(200);
      expect(result.body.data.listOrderSubmissions.nodes).toEqual([]);
    });

    it('pages of pages are over the cost limit: a top-level error with status 400', async () => {
      const pagesOfPages = '{ listOrderSubmissions(first: 200) { nodes { id strategy { orderSubmissions(first: 200) { nodes { id } } } } } }';
      expectRefusedBeforeExecution(await t.stack.graphql(t.limits.apiKey, pagesOfPages), /cost/i);
      const many = `{ ${Array.from({ length: 5 }, (_, i) => `p${i}: ${FULL_PAGE}`).join(' ')} }`;
      expectRefusedBeforeExecution(await t.stack.graphql(t.limits.apiKey, many), /cost/i);
    });

    it('a document over 2,000 tokens is refused with 400, with or without a key', async () => {
      const long = `{ viewer { account { ${'id '.repeat(2_100)} } } }`;
      expectRefusedBeforeExecution(await t.stack.graphql(t.limits.apiKey, long), /token/i, 'GRAPHQL_PARSE_FAILED');
      const anonymous = await t.stack.graphql(undefined, long);
      expect(anonymous.status).toBe(400);
      expect(anonymous.body.errors[0].message).toMatch(/token/i);
    });

    it('a refused mutation changes nothing', async () => {
      const { apiKey: own } = await t.stack.createAccountWithKey('Refused mutations');
      const creates = (n: number) => `mutation { ${Array.from({ length: n }, (_, i) => `c${i}: createStrategy(input: { name: "S${i}" }) { strategy { id } }`).join(' ')} }`;
      expectRefusedBeforeExecution(await t.stack.graphql(own, creates(16)), /alias/i);
      const list = await t.stack.graphql(own, '{ listStrategies { nodes { id } } }');
      expect(list.body.data.listStrategies.nodes).toEqual([]);
    });

    // 190 levels of fragments that each spread the next twice fit in 2,000 tokens: 2^190 viewers if
    // expanded at every spread. The gateway answers at once, and goes on answering everyone else.
    it('fragments spreading the next one twice, 190 levels: Variant A without a key, the cost refusal with one, both at once', async () => {
      const doubling = doublingFragments({ levels: 190, on: 'Query', innermost: 'viewer { account { id } }' });
      const started = performance.now();
      const [anonymous, keyed, health] = await Promise.all([
        t.stack.graphql(undefined, doubling),
        t.stack.graphql(t.limits.apiKey, doubling),
        fetch(t.stack.gatewayUrl.replace(/\/graphql$/, '/healthz')),
      ]);
      expect(anonymous.status).toBe(200);
      expect(anonymous.body).toEqual({ data: null, errors: [{ message: 'Authentication required', path: ['viewer'], extensions: { code: 'UNAUTHENTICATED' } }] });
      expectRefusedBeforeExecution(keyed, /cost/i);
      expect(health.status).toBe(200);
      expect(performance.now() - started).toBeLessThan(2_000);
    });

    // graphql's own NoFragmentCycles rule refuses the document; the limit rules must not crash meanwhile.
    it('a document whose fragments spread each other in a cycle is a 400 validation error, not a server error', async () => {
      const cyclic = '{ listOrderSubmissions { nodes { ...A } } } fragment A on OrderSubmission { strategy { orderSubmissions { nodes { ...A } } } }';
      const result = await t.stack.graphql(t.limits.apiKey, cyclic);
      expect(result.status).toBe(400);
      // graphql's rule names the cycle; the limit rules may refuse the document too, each with its own code.
      expect(result.body.errors.every((error: { extensions: { code: string } }) => ['GRAPHQL_VALIDATION_FAILED', 'QUERY_TOO_COMPLEX'].includes(error.extensions.code))).toBe(true);
      expect(result.body.errors.map((error: { message: string }) => error.message).join('\n')).toMatch(/cannot spread fragment/i);
    });
  });

  describe('argument values', () => {
    it.each([201, 0, -1])('first: %i on listOrderSubmissions is a top-level BAD_USER_INPUT', async (first) => {
      const result = await t.stack.graphql(t.limits.apiKey, `{ listOrderSubmissions(first: ${first}) { nodes { id } } }`);
      expect(result.body.data).toBeNull();
      expect(result.body.errors).toHaveLength(1);
      expect(result.body.errors[0]).toMatchObject({ path: ['listOrderSubmissions'], extensions: { code: 'BAD_USER_INPUT' } });
      expect(result.body.errors[0].message).toMatch(/first/);
    });

    it('first: 200 is accepted', async () => {
      const result = await t.stack.graphql(t.limits.apiKey, '{ listOrderSubmissions(first: 200) { nodes { id } } }');
      expect(result.body.errors).toBeUndefined();
    });

    it('a malformed DateTime is a top-level BAD_USER_INPUT naming the argument, inline or as a variable', async () => {
      const inline = await t.stack.graphql(t.limits.apiKey, '{ listOrderSubmissions(filter: { submittedAfter: "2026-02-30T00:00:00Z" }) { nodes { id } } }');
      expect(inline.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: expect.stringContaining('submittedAfter') });
      const variable = await t.stack.graphql(t.limits.apiKey, 'query ($t: DateTime) { listOrderSubmissions(filter: { submittedAfter: $t }) { nodes { id } } }', { t: '2026-11-21T14:03:07' });
      expect(variable.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: '$t' });
    });

    it('a Decimal sent as a JSON number or negative is a top-level BAD_USER_INPUT and creates nothing', async () => {
      const { apiKey: own } = await t.stack.createAccountWithKey('Decimals');
      const submit = 'mutation ($i: SubmitOrderInput!) { submitOrder(input: $i) { orderSubmission { id } error { code } } }';
      for (const quantity of [10, '-1', '1e3']) {
        const result = await t.stack.graphql(own, submit, { i: { symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity } });
        expect(result.body.data ?? null).toBeNull();
        expect(result.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: '$i.quantity' });
      }
      const inline = await t.stack.graphql(own, 'mutation { submitOrder(input: { symbol: "AAPL", side: BUY, type: MARKET, quantity: 10 }) { orderSubmission { id } } }');
      expect(inline.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'input.quantity' });
      const list = await t.stack.graphql(own, '{ listOrderSubmissions { nodes { id } } }');
      expect(list.body.data.listOrderSubmissions.nodes).toEqual([]);
    });
  });

  describe('errors never carry internals', () => {
    it('a subgraph that is down: the other root fields still get data, its field a top-level error naming no host', async () => {
      const strategiesPort = String(new URL(t.stack.urls.strategies).port);
      await t.stack.stopService('strategies');
      try {
        const started = Date.now();
        const result = await t.stack.graphql(t.limits.apiKey, '{ viewer { account { id } } strategy(id: "01a2002f-5e6c-707d-8b35-116f38247cd4") { id name } }');
        expect(Date.now() - started).toBeLessThan(t.stack.config.limits.gatewayTimeoutMs);
        expect(result.status).toBe(200);
        expect(result.body.data.viewer.account.id).toBeTruthy();
        expect(result.body.data.strategy).toBeNull();
        expect(result.body.errors).toHaveLength(1);
        expect(result.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
        expectNothingInternal(result.body, `:${strategiesPort}`);
        // Contract section 2: a top-level error carries the path of the field it is about.
        expect(result.body.errors[0].path).toEqual(['strategy']);
      } finally {
        await t.stack.startService('strategies');
      }
      const after = await t.stack.graphql(t.limits.apiKey, '{ strategy(id: "01a2002f-5e6c-707d-8b35-116f38247cd4") { id } }');
      expect(after.body).toEqual({ data: { strategy: null } });
    });

    it('an internal failure is answered as "Internal server error", with no message, SQL or stack of its own', async () => {
      // An account whose rows vanish while its key is still cached makes the accounts resolver fail internally.
      const victim = await t.stack.createAccountWithKey('Vanishing');
      expect((await t.stack.graphql(victim.apiKey, '{ viewer { account { id } } }')).status).toBe(200);
      const client = new pg.Client({ connectionString: t.stack.databaseUrl });
      await client.connect();
      try {
        await client.query('delete from accounts.api_keys where account_id = $1', [victim.accountId]);
        await client.query('delete from accounts.accounts where id = $1', [victim.accountId]);
      } finally {
        await client.end();
      }
      const result = await t.stack.graphql(victim.apiKey, '{ viewer { account { id name } } }');
      // The key's record is still cached (Redis keeps it 30 s), so the request reaches the resolver.
      expect(result.status).toBe(200);
      expect(result.body.data).toBeNull();
      expect(result.body.errors).toHaveLength(1);
      expect(result.body.errors[0]).toMatchObject({ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
      expect(Object.keys(result.body.errors[0].extensions)).toEqual(['code']);
      expectNothingInternal(result.body, victim.accountId, victim.apiKeyId, 'asserted', 'Error');
    });
  });

  describe('a subgraph that never answers', () => {
    /** A TCP server that accepts connections and never replies: a hung subgraph. */
    async function hangingServer() {
      const sockets = new Set<net.Socket>();
      const server = net.createServer((socket) => {
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return {
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/graphql`,
        close: () =>
          new Promise<void>((resolve) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => resolve());
          }),
      };
    }

    async function gatewayWith(hungUrl: string, limits: Partial<Config['limits']>) {
      return t.stack.anotherGateway({
        config: { subgraphUrls: { ...t.stack.config.subgraphUrls, strategies: hungUrl }, limits: { ...t.stack.config.limits, ...limits } },
      });
    }

    const QUERY = JSON.stringify({ query: '{ viewer { account { id } } strategy(id: "01a2002f-5e6c-707d-8b35-116f38247cd4") { id name } }' });

    it('gives up after the subgraph timeout: the other fields get data, its field a top-level error', async () => {
      const hung = await hangingServer();
      const gateway = await gatewayWith(hung.url, { subgraphTimeoutMs: 400 });
      try {
        const started = Date.now();
        const result = await t.stack.post(QUERY, { 'content-type': 'application/json', 'x-api-key': t.limits.apiKey }, gateway.url);
        expect(Date.now() - started).toBeLessThan(3_000);
        expect(result.status).toBe(200);
        expect(result.body.data.viewer.account.id).toBeTruthy();
        expect(result.body.data.strategy).toBeNull();
        expect(result.body.errors.map((error: { path: string[] }) => error.path)).toEqual([['strategy']]);
        expect(result.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
        expectNothingInternal(result.body, hung.url, new URL(hung.url).port);
      } finally {
        await gateway.close();
        await hung.close();
      }
    });

    it('answers by the gateway timeout even when the subgraph timeout is longer', async () => {
      const hung = await hangingServer();
      const gateway = await gatewayWith(hung.url, { subgraphTimeoutMs: 20_000, gatewayTimeoutMs: 500 });
      try {
        const started = Date.now();
        const result = await t.stack.post(QUERY, { 'content-type': 'application/json', 'x-api-key': t.limits.apiKey }, gateway.url);
        expect(Date.now() - started).toBeLessThan(3_000);
        expect(result.status).toBeGreaterThanOrEqual(500);
        expect(result.body.errors.length).toBeGreaterThanOrEqual(1);
        expectNothingInternal(result.body, hung.url);
      } finally {
        await hung.close();
        await gateway.close();
      }
    });
  });

  describe('health', () => {
    it('/healthz and /readyz answer 200 without auth on the gateway and on every subgraph', async () => {
      const bases = [t.stack.gatewayUrl, ...SERVICE_NAMES.map((name) => t.stack.urls[name])].map((url) => url.replace(/\/graphql$/, ''));
      expect(bases).toHaveLength(6);
      for (const base of bases) {
        for (const path of ['/healthz', '/readyz']) {
          const response = await fetch(`${base}${path}`);
          expect(response.status, `${base}${path}`).toBe(200);
          expect(await response.json()).toEqual({ status: 'ok' });
        }
      }
    });
  });
});

describe('rate limits', () => {
  const t = useStack({ env: { RATE_LIMIT_BURST: '5', RATE_LIMIT_PER_SECOND: '1', FAILED_AUTH_BURST: '3', FAILED_AUTH_PER_SECOND: '1' }, accounts: [] });

  it('per key: the 6th quick request of a burst of 5 gets 429 with Retry-After; other keys are untouched', async () => {
    const busy = await t.stack.createAccountWithKey('Busy');
    const quiet = await t.stack.createAccountWithKey('Quiet');
    const remaining: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const result = await t.stack.graphql(busy.apiKey, '{ viewer { account { id } } }');
      expect(result.status, `request ${i + 1}`).toBe(200);
      expect(result.headers.get('ratelimit-policy')).toBe('"api-key";q=5;w=5');
      remaining.push(Number(/r=(\d+)/.exec(result.headers.get('ratelimit') ?? '')?.[1]));
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);

    const refused = await t.stack.graphql(busy.apiKey, '{ viewer { account { id } } }');
    expect(refused.status).toBe(429);
    const retryAfter = refused.headers.get('retry-after');
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(refused.body).not.toHaveProperty('data');
    expect(refused.headers.get('ratelimit')).toMatch(/^"api-key";r=0;t=\d+$/);

    expect((await t.stack.graphql(quiet.apiKey, '{ viewer { account { id } } }')).status).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, Number(retryAfter) * 1_000 + 50));
    expect((await t.stack.graphql(busy.apiKey, '{ viewer { account { id } } }')).status).toBe(200);
  });

  it('failed authentications are limited per client address', async () => {
    for (let i = 0; i < 3; i += 1) {
      const result = await t.stack.graphql(generateApiKey(), '{ viewer { account { id } } }');
      expect(result.status, `failure ${i + 1}`).toBe(401);
    }
    const limited = await t.stack.graphql(generateApiKey(), '{ viewer { account { id } } }');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body).not.toHaveProperty('data');
    // Requests without a key are not authentication failures: Variant A still answers.
    expect((await t.stack.graphql(undefined, '{ viewer { account { id } } }')).status).toBe(200);
    // The limit lifts as it refills.
    await new Promise((resolve) => setTimeout(resolve, Number(limited.headers.get('retry-after')) * 1_000 + 50));
    expect((await t.stack.graphql(generateApiKey(), '{ viewer { account { id } } }')).status).toBe(401);
  });
});
