import { getIntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { recordingLogger } from '@ots/shared/testing/recording-logger';
import { useStack } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';
import { displayPrefixOf, generateApiKey, LIVE_PREFIX, createAccount, createKey, revokeKey, rollKey, setApiAccess } from '@ots/accounts';

// The failed-authentication limit per address has its own test (limits.e2e); here many refusals come from one address.
const t = useStack({ env: { FAILED_AUTH_BURST: '10000' }, accounts: ['alice'] });

const VIEWER = '{ viewer { account { id name createdAt } apiKey { id name environment displayPrefix createdAt expiresAt lastUsedAt revokedAt } } }';
const INVALID = { detail: 'Invalid or expired API key' };
const DISABLED = { detail: 'API access is not enabled for this account' };
const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function send(headers: Record<string, string>, query: string, extra: Record<string, unknown> = {}): Promise<HttpResult> {
  return t.stack.post(JSON.stringify({ query, ...extra }), { 'content-type': 'application/json', ...headers });
}

function variantA(...responseKeys: string[]) {
  return {
    data: null,
    errors: responseKeys.map((key) => ({ message: 'Authentication required', path: [key], extensions: { code: 'UNAUTHENTICATED' } })),
  };
}

function expectInvalidKey(result: HttpResult, apiKey: string) {
  expect(result.status).toBe(401);
  expect(result.body).toEqual(INVALID);
  expect(result.headers.get('www-authenticate')).toBe('ApiKey header="X-API-Key"');
  expect(JSON.stringify(result.body)).not.toContain(apiKey);
}

async function newKey(accountId: string, options: { expiresInMs?: number } = {}) {
  const { key, apiKey } = await createKey(t.stack.operator, { accountId, name: 'extra', ...options });
  return { keyId: key.id, apiKey };
}

describe('no X-API-Key: Variant A, 200', () => {
  const QUERY = 'query { viewer { account { id } } mine: listOrderSubmissions(first: 5) { nodes { id } } }';

  it('one UNAUTHENTICATED error per root field, path = response key, data null', async () => {
    const result = await send({}, QUERY);
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('viewer', 'mine'));
  });

  it('Authorization: Bearer <valid key> is not read', async () => {
    const result = await send({ authorization: `Bearer ${t.alice.apiKey}` }, QUERY);
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('viewer', 'mine'));
  });

  it('x-api-token: <valid key> is not read', async () => {
    const result = await send({ 'x-api-token': t.alice.apiKey }, QUERY);
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('viewer', 'mine'));
  });

  it('an empty X-API-Key is no key, whatever Authorization and x-api-token say', async () => {
    for (const empty of ['', '   ']) {
      const result = await send({ 'x-api-key': empty, authorization: `Bearer ${t.alice.apiKey}`, 'x-api-token': t.alice.apiKey }, QUERY);
      expect(result.status).toBe(200);
      expect(result.body).toEqual(variantA('viewer', 'mine'));
    }
  });

  it('fields the schema does not have get Variant A too: nothing of the schema leaks', async () => {
    const result = await send({}, '{ adminUsers { email passwordHash } viewr { id } }');
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('adminUsers', 'viewr'));
    expect(JSON.stringify(result.body)).not.toMatch(/Cannot query|Did you mean|viewer/);
  });

  it('aliases, fragments and operationName decide the paths', async () => {
    const document = `query A { viewer { account { id } } }
      query B { ...Roots s: strategy(id: "x") { id } }
      fragment Roots on Query { listFills { nodes { id } } }`;
    const result = await send({}, document, { operationName: 'B' });
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('listFills', 's'));
  });

  it('mutations get Variant A too', async () => {
    const result = await send({}, 'mutation { createStrategy(input: { name: "Unauthenticated" }) { strategy { id } } }');
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('createStrategy'));
    const strategies = await t.stack.graphql(t.alice.apiKey, '{ listStrategies { nodes { name } } }');
    expect(strategies.body.data.listStrategies.nodes).toEqual([]);
  });

  it('introspection without a key gets Variant A and no type names', async () => {
    const result = await send({}, '{ __schema { types { name } } __type(name: "OrderSubmission") { fields { name } } }');
    expect(result.status).toBe(200);
    expect(result.body).toEqual(variantA('__schema', '__type'));
    expect(JSON.stringify(result.body)).not.toMatch(/Viewer|clientOrderId/);
  });

  it('a document that does not parse gets the GraphQL syntax error with status 400', async () => {
    const result = await send({}, '{ viewer { account { id } ');
    expect(result.status).toBe(400);
    expect(result.body.data ?? null).toBeNull();
    expect(result.body.errors).toHaveLength(1);
    expect(result.body.errors[0].message).toMatch(/Syntax Error/);
    expect(result.body.errors[0].extensions.code).toBe('GRAPHQL_PARSE_FAILED');
  });
});

describe('a key that is not a live, current key: Variant B, 401', () => {
  const aliceKeyBody = () => t.alice.apiKey.slice(LIVE_PREFIX.length);

  it.each<[string, () => string]>([
    ['a malformed key', () => 'not-a-key'],
    ['a truncated key', () => t.alice.apiKey.slice(0, -1)],
    ['a key of an unknown prefix', () => `svc_test_${aliceKeyBody()}`],
    ['a key of another service', () => `sk_live_${aliceKeyBody()}`],
    ['a sandbox key', () => `svc_sandbox_${aliceKeyBody()}`],
    ['a mistyped key (one character changed)', () => t.alice.apiKey.slice(0, 12) + (t.alice.apiKey[12] === 'a' ? 'b' : 'a') + t.alice.apiKey.slice(13)],
    ['a well-formed key with a valid checksum that was never issued', () => generateApiKey()],
  ])('%s', async (_what, keyOf) => {
    const apiKey = keyOf();
    const result = await t.stack.graphql(apiKey, VIEWER);
    expectInvalidKey(result, apiKey);
    expect(result.body).not.toHaveProperty('data');
    expect(result.body).not.toHaveProperty('errors');
  });

  it('a revoked key is refused at once, though it was just used', async () => {
    const { keyId, apiKey } = await newKey(t.alice.accountId);
    expect((await t.stack.graphql(apiKey, VIEWER)).status).toBe(200);
    await revokeKey(t.stack.operator, { keyId });
    expectInvalidKey(await t.stack.graphql(apiKey, VIEWER), apiKey);
    // and stays refused once every cache entry would have lapsed
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expectInvalidKey(await t.stack.graphql(apiKey, VIEWER), apiKey);
  });

  it('an expired key is refused', async () => {
    const { apiKey } = await newKey(t.alice.accountId, { expiresInMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expectInvalidKey(await t.stack.graphql(apiKey, VIEWER), apiKey);
  });

  it('a key that expires while cached is refused from its expiry on', async () => {
    const { apiKey } = await newKey(t.alice.accountId, { expiresInMs: 3_000 });
    const first = await t.stack.graphql(apiKey, VIEWER);
    expect(first.status).toBe(200);
    expect(Date.parse(first.body.data.viewer.apiKey.expiresAt)).toBeGreaterThan(Date.now());
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(first.body.data.viewer.apiKey.expiresAt) - Date.now() + 20)));
    expectInvalidKey(await t.stack.graphql(apiKey, VIEWER), apiKey);
  });

  it('an unknown key is refused whatever the document asks for', async () => {
    const apiKey = generateApiKey();
    const result = await send({ 'x-api-key': apiKey }, '{ __typename }');
    expectInvalidKey(result, apiKey);
  });
});

describe('an account with API access disabled: 403', () => {
  it('is refused with 403 and the documented detail, and works again once re-enabled', async () => {
    const bob = await t.stack.createAccountWithKey('Bob');
    expect((await t.stack.graphql(bob.apiKey, VIEWER)).status).toBe(200);

    await setApiAccess(t.stack.operator, { accountId: bob.accountId, enabled: false });
    const refused = await t.stack.graphql(bob.apiKey, VIEWER);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual(DISABLED);
    expect(JSON.stringify(refused.body)).not.toContain(bob.apiKey);

    // A second key of the same account is refused the same way.
    const { apiKey: second } = await newKey(bob.accountId);
    expect((await t.stack.graphql(second, VIEWER)).status).toBe(403);

    await setApiAccess(t.stack.operator, { accountId: bob.accountId, enabled: true });
    const again = await t.stack.graphql(bob.apiKey, VIEWER);
    expect(again.status).toBe(200);
    expect(again.body.data.viewer.account.id).toBe(bob.accountId);
  });

  it('a revoked key of a disabled account is 401, not 403', async () => {
    const carol = await t.stack.createAccountWithKey('Carol');
    await revokeKey(t.stack.operator, { keyId: carol.apiKeyId });
    await setApiAccess(t.stack.operator, { accountId: carol.accountId, enabled: false });
    expectInvalidKey(await t.stack.graphql(carol.apiKey, VIEWER), carol.apiKey);
  });
});

describe('a valid key', () => {
  it('viewer returns the account and the key, never the key itself', async () => {
    const result = await t.stack.graphql(t.alice.apiKey, VIEWER);
    expect(result.status).toBe(200);
    expect(result.body.errors).toBeUndefined();
    const { account, apiKey } = result.body.data.viewer;
    expect(account).toEqual({ id: t.alice.accountId, name: 'Alice', createdAt: expect.stringMatching(ISO_MILLIS) });
    expect(apiKey).toMatchObject({
      id: t.alice.apiKeyId,
      name: 'test',
      environment: 'LIVE',
      displayPrefix: displayPrefixOf(t.alice.apiKey),
      createdAt: expect.stringMatching(ISO_MILLIS),
      expiresAt: null,
      revokedAt: null,
    });
    expect(apiKey.displayPrefix).toMatch(/^svc_live_[0-9A-Za-z]{4}…[0-9A-Za-z]{4}$/);
    expect(apiKey.displayPrefix).toBe(`svc_live_${t.alice.apiKey.slice(9, 13)}…${t.alice.apiKey.slice(-4)}`);
    expect(JSON.stringify(result.body)).not.toContain(t.alice.apiKey);
  });

  it('carries RateLimit-Policy and RateLimit headers', async () => {
    const result = await t.stack.graphql(t.alice.apiKey, VIEWER);
    expect(result.headers.get('ratelimit-policy')).toBe('"api-key";q=100;w=2');
    expect(result.headers.get('ratelimit')).toMatch(/^"api-key";r=\d{1,3};t=\d+$/);
    const remaining = Number(/r=(\d+)/.exec(result.headers.get('ratelimit')!)![1]);
    expect(remaining).toBeLessThan(100);
  });

  it('sees only its own account', async () => {
    const dave = await t.stack.createAccountWithKey('Dave');
    const [a, d] = await Promise.all([t.stack.graphql(t.alice.apiKey, VIEWER), t.stack.graphql(dave.apiKey, VIEWER)]);
    expect(a.body.data.viewer.account.id).toBe(t.alice.accountId);
    expect(d.body.data.viewer.account).toMatchObject({ id: dave.accountId, name: 'Dave' });
    expect(d.body.data.viewer.apiKey.id).toBe(dave.apiKeyId);
  });

  it('introspection works with a valid key', async () => {
    const result = await t.stack.graphql(t.alice.apiKey, '{ __schema { queryType { name } mutationType { name } types { name } } }');
    expect(result.status).toBe(200);
    expect(result.body.data.__schema.queryType.name).toBe('Query');
    expect(result.body.data.__schema.types.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['OrderSubmission', 'Strategy', 'Fill', 'Viewer']));
  });

  // GraphQL tools (GraphiQL, codegen, Apollo Sandbox, Postman) send graphql-js's standard
  // introspection query; the contract's "a person with a GraphQL tool" relies on it working with a key.
  it('the standard introspection query of GraphQL tools works with a valid key', async () => {
    const result = await t.stack.graphql(t.alice.apiKey, getIntrospectionQuery());
    expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
    expect(result.status).toBe(200);
    expect(result.body.data.__schema.queryType.name).toBe('Query');
  });

  it('lastUsedAt becomes set after use (flushed off the request path) and the key never shows', async () => {
    const { keyId, apiKey } = await newKey(t.alice.accountId);
    const first = await t.stack.graphql(apiKey, VIEWER);
    expect(first.status).toBe(200);
    expect(first.body.data.viewer.apiKey.id).toBe(keyId);
    const usedAround = Date.now();
    const deadline = Date.now() + 20_000;
    let lastUsedAt: string | null = first.body.data.viewer.apiKey.lastUsedAt;
    let last: HttpResult = first;
    while (lastUsedAt === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 400));
      last = await t.stack.graphql(apiKey, VIEWER);
      lastUsedAt = last.body.data.viewer.apiKey.lastUsedAt;
    }
    expect(lastUsedAt).toMatch(ISO_MILLIS);
    expect(Math.abs(Date.parse(lastUsedAt!) - usedAround)).toBeLessThan(10_000);
    expect(JSON.stringify(last.body)).not.toContain(apiKey);
    expect(JSON.stringify(last.body)).not.toContain(apiKey.slice(LIVE_PREFIX.length, LIVE_PREFIX.length + 12));
  });
});

describe('rolled keys', () => {
  it('the new key works, the old one works during the grace, and a grace of 0 refuses the old one at once', async () => {
    const account = await createAccount(t.stack.operator, { name: 'Roller' });
    const original = await newKey(account.id);
    expect((await t.stack.graphql(original.apiKey, VIEWER)).status).toBe(200);

    const rolled = await rollKey(t.stack.operator, { keyId: original.keyId, graceMs: 3_600_000 });
    expect(rolled.previousKeyId).toBe(original.keyId);
    expect(rolled.apiKey).not.toBe(original.apiKey);
    const viaNew = await t.stack.graphql(rolled.apiKey, VIEWER);
    expect(viaNew.status).toBe(200);
    expect(viaNew.body.data.viewer).toMatchObject({ account: { id: account.id }, apiKey: { id: rolled.keyId } });

    const viaOld = await t.stack.graphql(original.apiKey, VIEWER);
    expect(viaOld.status).toBe(200);
    expect(viaOld.body.data.viewer.apiKey.id).toBe(original.keyId);
    expect(Date.parse(viaOld.body.data.viewer.apiKey.expiresAt)).toBe(rolled.previousExpiresAt.getTime());
    expect(rolled.previousExpiresAt.getTime() - Date.now()).toBeGreaterThan(3_500_000);

    const rolledAgain = await rollKey(t.stack.operator, { keyId: rolled.keyId, graceMs: 0 });
    expectInvalidKey(await t.stack.graphql(rolled.apiKey, VIEWER), rolled.apiKey);
    const viaNewest = await t.stack.graphql(rolledAgain.apiKey, VIEWER);
    expect(viaNewest.status).toBe(200);
    expect(viaNewest.body.data.viewer.apiKey.id).toBe(rolledAgain.keyId);
    // The first key's grace (1 h) is untouched by the second roll.
    expect((await t.stack.graphql(original.apiKey, VIEWER)).status).toBe(200);
  });
});

describe('the key never reaches a response body', () => {
  it('not in a validation error, a refused key, nor a disabled account', async () => {
    const eve = await t.stack.createAccountWithKey('Eve');
    const results = [
      await t.stack.graphql(eve.apiKey, '{ viewer { nosuchfield } }'),
      await t.stack.graphql(eve.apiKey, '{ viewer { account { id } '),
      await t.stack.graphql(eve.apiKey, 'query ($x: Int!) { viewer { account { id } } }', { x: 'nope' }),
      await t.stack.post(JSON.stringify([{ query: '{ viewer { account { id } } }' }]), { 'content-type': 'application/json', 'x-api-key': eve.apiKey }),
    ];
    for (const result of results) {
      expect(result.status).toBeGreaterThanOrEqual(400);
      expect(JSON.stringify(result.body)).not.toContain(eve.apiKey);
      expect(JSON.stringify(result.body)).not.toContain(eve.apiKey.slice(LIVE_PREFIX.length, LIVE_PREFIX.length + 12));
    }
    await setApiAccess(t.stack.operator, { accountId: eve.accountId, enabled: false });
    const disabled = await t.stack.graphql(eve.apiKey, VIEWER);
    expect(disabled.status).toBe(403);
    expect(JSON.stringify(disabled.body)).not.toContain(eve.apiKey);
    await revokeKey(t.stack.operator, { keyId: eve.apiKeyId });
    expectInvalidKey(await t.stack.graphql(eve.apiKey, VIEWER), eve.apiKey);
  });
});

describe('a second gateway over the same key store', () => {
  it('in production, a key sent over plain HTTP is refused; through a TLS-terminating proxy it is served', async () => {
    const gateway = await t.stack.anotherGateway({ config: { production: true, trustProxy: ['loopback'] } });
    try {
      const plain = await t.stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': t.alice.apiKey }, gateway.url);
      expect(plain.status).toBeGreaterThanOrEqual(400);
      expect(plain.body).not.toHaveProperty('data');
      expect(JSON.stringify(plain.body)).not.toContain(t.alice.apiKey);
      const proxied = await t.stack.post(
        JSON.stringify({ query: VIEWER }),
        { 'content-type': 'application/json', 'x-api-key': t.alice.apiKey, 'x-forwarded-proto': 'https' },
        gateway.url,
      );
      expect(proxied.status).toBe(200);
      expect(proxied.body.data.viewer.account.id).toBe(t.alice.accountId);
    } finally {
      await gateway.close();
    }
  });

  it('never writes an API key or an assertion to its log, even at trace level', async () => {
    const { logger, written } = recordingLogger('gateway');
    const gateway = await t.stack.anotherGateway({ logger });
    const frank = await t.stack.createAccountWithKey('Frank');
    const unknown = generateApiKey();
    try {
      const at = (apiKey: string | undefined, query: string) =>
        t.stack.post(JSON.stringify({ query }), { 'content-type': 'application/json', ...(apiKey ? { 'x-api-key': apiKey } : {}) }, gateway.url);
      expect((await at(frank.apiKey, VIEWER)).status).toBe(200);
      expect((await at(frank.apiKey, '{ viewer { nosuchfield } }')).status).toBe(400);
      expect((await at(frank.apiKey, '{ listOrderSubmissions { nodes { ...A } } } fragment A on OrderSubmission { strategy { orderSubmissions { nodes { ...A } } } }')).status).toBeGreaterThanOrEqual(400);
      expect((await at(unknown, VIEWER)).status).toBe(401);
      expect((await at('svc_live_short', VIEWER)).status).toBe(401);
      await setApiAccess(t.stack.operator, { accountId: frank.accountId, enabled: false });
      expect((await at(frank.apiKey, VIEWER)).status).toBe(403);
      await setApiAccess(t.stack.operator, { accountId: frank.accountId, enabled: true });
    } finally {
      await gateway.close();
    }
    const log = written();
    expect(log.length).toBeGreaterThan(0);
    for (const secret of [frank.apiKey, unknown]) expect(log).not.toContain(secret.slice(LIVE_PREFIX.length, LIVE_PREFIX.length + 12));
    expect(log).not.toMatch(/v1\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/);
  });
});
