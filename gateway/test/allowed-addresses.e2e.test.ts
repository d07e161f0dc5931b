import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, listSecurityEvents, openKeyStore, updateKey, type OpenedKeyStore } from '@ots/accounts';
import type { Config } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { startGateway } from '../src/server.ts';
import { NO_RATE_LIMIT_ENV } from '../../testing/fixture.ts';
import { msUntilEvery, postWithRawHeaders } from '../../testing/requests.ts';
import { startStack, type TestStack } from '../../testing/stack.ts';

/**
 * Contract section 5, "Scopes and allowed addresses": a key with allowed addresses works only from
 * them, over IPv4 and IPv6; the client address is the connection's, or the first untrusted hop of
 * X-Forwarded-For behind a proxy that TRUST_PROXY names; a change takes effect on every gateway
 * within 1 s, like a revocation.
 */
const logger = createLogger('allowed-addresses-test', 'silent');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const VIEWER = '{ viewer { apiKey { id } } }';
const INVALID = { detail: 'Invalid or expired API key' };

interface Gateway {
  server: RunningServer;
  keys: OpenedKeyStore;
  /** The same gateway over IPv4 loopback and over IPv6 loopback (it listens on both). */
  v4: string;
  v6: string;
}

/** A gateway on every address (`::`, dual-stack), with its own key store, as another replica. */
async function startDualStackGateway(config: Config): Promise<Gateway> {
  const keys = openKeyStore(config, logger, { listen: true });
  const server = await startGateway({ config: { ...config, host: '::' }, keyStore: keys.keyStore, logger, port: 0, isReady: async () => true });
  return { server, keys, v4: `http://127.0.0.1:${server.port}/graphql`, v6: `http://[::1]:${server.port}/graphql` };
}

let stack: TestStack;
let direct: Gateway;
let behindProxy: Gateway;
let accountId: string;

beforeAll(async () => {
  stack = await startStack({ env: { ...NO_RATE_LIMIT_ENV, FAILED_AUTH_BURST: '10000' } });
  direct = await startDualStackGateway({ ...stack.config, trustProxy: false });
  behindProxy = await startDualStackGateway({ ...stack.config, trustProxy: ['loopback'] });
  accountId = (await stack.createAccountWithKey('Fenced')).accountId;
  // Every key store (the stack's and the two here) follows invalidations before the tests change keys.
  await stack.untilKeyStoresListen(3);
});

afterAll(async () => {
  for (const gateway of [direct, behindProxy]) {
    await gateway?.server.close();
    await gateway?.keys.close();
  }
  await stack?.close();
});

async function status(url: string, apiKey: string, forwardedFor?: string): Promise<number> {
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey, ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }) };
  const result = await stack.post(JSON.stringify({ query: VIEWER }), headers, url);
  if (result.status === 401) expect(result.body).toEqual(INVALID);
  return result.status;
}

async function keyAllowedFrom(...allowedCidrs: string[]) {
  const { key, apiKey } = await createKey(stack.operator, { accountId, allowedCidrs });
  return { keyId: key.id, displayPrefix: key.display_prefix, apiKey };
}

describe('a key with allowed addresses, without a trusted proxy', () => {
  it('an IPv4 range admits IPv4 loopback and refuses IPv6 loopback with 401 Variant B', async () => {
    const { apiKey } = await keyAllowedFrom('127.0.0.0/8');
    expect(await status(direct.v4, apiKey)).toBe(200);
    expect(await status(direct.v6, apiKey)).toBe(401);
  });

  it('an IPv6 range admits IPv6 loopback and refuses IPv4 loopback', async () => {
    const { apiKey } = await keyAllowedFrom('::1/128');
    expect(await status(direct.v6, apiKey)).toBe(200);
    expect(await status(direct.v4, apiKey)).toBe(401);
  });

  it('a spoofed X-Forwarded-For changes nothing: neither admits nor refuses', async () => {
    const elsewhere = await keyAllowedFrom('203.0.113.0/24');
    expect(await status(direct.v4, elsewhere.apiKey, '203.0.113.9')).toBe(401);
    const loopback = await keyAllowedFrom('127.0.0.1');
    expect(await status(direct.v4, loopback.apiKey, '198.51.100.1')).toBe(200);
  });

  it('a key without allowed addresses works from anywhere', async () => {
    const { apiKey } = await keyAllowedFrom();
    expect([await status(direct.v4, apiKey), await status(direct.v6, apiKey)]).toEqual([200, 200]);
  });
});

describe('behind a proxy that TRUST_PROXY names', () => {
  it('the client is the first untrusted hop of X-Forwarded-For, IPv4 and IPv6', async () => {
    const v4 = await keyAllowedFrom('203.0.113.0/24');
    expect(await status(behindProxy.v4, v4.apiKey, '203.0.113.9')).toBe(200);
    expect(await status(behindProxy.v4, v4.apiKey, '203.0.113.9, 127.0.0.1')).toBe(200);
    expect(await status(behindProxy.v4, v4.apiKey, '198.51.100.1')).toBe(401);
    // An entry the client wrote in front of what the proxy appended gains it nothing.
    expect(await status(behindProxy.v4, v4.apiKey, '203.0.113.9, 198.51.100.1')).toBe(401);
    // Without the header the client is the proxy itself, which is not allowed.
    expect(await status(behindProxy.v4, v4.apiKey)).toBe(401);

    const v6 = await keyAllowedFrom('2001:db8::/32');
    expect(await status(behindProxy.v6, v6.apiKey, '2001:db8:5::7')).toBe(200);
    expect(await status(behindProxy.v4, v6.apiKey, '2001:db9::7')).toBe(401);
  });
});

describe('failed authentications behind a proxy', () => {
  it("count against an IPv6 client's /64, not each address of it, and against an IPv4 address alone", async () => {
    const limited = await startDualStackGateway({ ...stack.config, trustProxy: ['loopback'], limits: { ...stack.config.limits, failedAuthBurst: 3, failedAuthPerSecond: 0.001 } });
    try {
      const wrongKey = 'svc_live_' + 'x'.repeat(40);
      const statuses = async (addresses: string[]) => Promise.all(addresses.map(async (address) => (await stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': wrongKey, 'x-forwarded-for': address }, limited.v4)).status));
      // Four addresses of one /64: the fourth failure is over its burst of three.
      expect(await statuses(['2001:db8:1:1::1', '2001:db8:1:1::2', '2001:db8:1:1::3'])).toEqual([401, 401, 401]);
      expect(await statuses(['2001:db8:1:1::4'])).toEqual([429]);
      // Another /64, and IPv4 neighbours, have allowances of their own.
      expect(await statuses(['2001:db8:1:2::1'])).toEqual([401]);
      expect(await statuses(['198.51.100.1', '198.51.100.2'])).toEqual([401, 401]);
    } finally {
      await limited.server.close();
      await limited.keys.close();
    }
  });
});

describe('the security log', () => {
  it('records a refusal with the address, once a minute per key and address', async () => {
    const { displayPrefix, apiKey } = await keyAllowedFrom('203.0.113.0/24');
    for (let i = 0; i < 5; i += 1) expect(await status(behindProxy.v4, apiKey, '198.51.100.1')).toBe(401);
    expect(await status(behindProxy.v4, apiKey, '198.51.100.2')).toBe(401);
    expect(await status(direct.v4, apiKey)).toBe(401);
    // Written off the request path: wait until the three addresses are there, then a little more for any repeat.
    const refusedFrom = async () =>
      (await listSecurityEvents(stack.operator, { accountId }))
        .filter((event) => event.type === 'key.refused_address' && event.keyDisplayPrefix === displayPrefix)
        .map((event) => event.clientAddress)
        .sort();
    for (let tries = 0; (await refusedFrom()).length < 3 && tries < 1000; tries += 1) await sleep(20);
    await sleep(200);
    expect(await refusedFrom()).toEqual(['127.0.0.1', '198.51.100.1', '198.51.100.2']);
  });

  it("records the refused request's user agent without control characters, C1 ones (CSI, OSC) included", async () => {
    const { displayPrefix, apiKey } = await keyAllowedFrom('203.0.113.0/24');
    const agent = 'curl/8.5 \u009b2J\u009d0;retitled\u009c\u0085(bot)\u0080\u009f';
    expect(await postWithRawHeaders(direct.v4, JSON.stringify({ query: VIEWER }), { 'x-api-key': apiKey, 'user-agent': agent })).toBe(401);
    const refusals = async () =>
      (await listSecurityEvents(stack.operator, { accountId })).filter((event) => event.type === 'key.refused_address' && event.keyDisplayPrefix === displayPrefix);
    for (let tries = 0; (await refusals()).length < 1 && tries < 1000; tries += 1) await sleep(20);
    expect((await refusals()).map((event) => event.userAgent)).toEqual(['curl/8.5 2J0;retitled(bot)']);
  });
});

describe('changes of scopes and addresses take effect on every gateway within 1 s', () => {
  const msUntilBoth = (check: (url: string) => Promise<boolean>, since: number) => msUntilEvery([direct.v4, behindProxy.v4], check, since);

  it('a key that loses read is refused listFills by both within 1 s', async () => {
    const { keyId, apiKey } = await keyAllowedFrom();
    const listFills = (url: string) => stack.post(JSON.stringify({ query: '{ listFills { nodes { id } } }' }), { 'content-type': 'application/json', 'x-api-key': apiKey }, url);
    for (const url of [direct.v4, behindProxy.v4]) expect((await listFills(url)).body.errors).toBeUndefined();
    await updateKey(stack.operator, { keyId, scopes: ['orders:write'] });
    const changedAt = Date.now();
    const forbidden = async (url: string) => (await listFills(url)).body.errors?.[0]?.extensions?.code === 'FORBIDDEN';
    expect(await msUntilBoth(forbidden, changedAt)).toBeLessThanOrEqual(1_000);
  });

  it('a key fenced to other addresses is refused by both within 1 s; opened again, admitted within 1 s', async () => {
    const { keyId, apiKey } = await keyAllowedFrom();
    for (const url of [direct.v4, behindProxy.v4]) expect(await status(url, apiKey)).toBe(200);
    await updateKey(stack.operator, { keyId, allowedCidrs: ['10.0.0.0/8'] });
    const fencedAt = Date.now();
    expect(await msUntilBoth(async (url) => (await status(url, apiKey)) === 401, fencedAt)).toBeLessThanOrEqual(1_000);
    await updateKey(stack.operator, { keyId, allowedCidrs: [] });
    const openedAt = Date.now();
    expect(await msUntilBoth(async (url) => (await status(url, apiKey)) === 200, openedAt)).toBeLessThanOrEqual(1_000);
  });
});
