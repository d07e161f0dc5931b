import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { createLogger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { msUntilEvery } from '../../../testing/requests.ts';
import { startStack, type HttpResult, type TestStack } from '../../../testing/stack.ts';
import { startGateway } from '@ots/gateway/server';
import { SCHEMA } from '../migrations/index.ts';
import { generateApiKey, hashApiKey } from '../src/domain.ts';
import { createKey, revokeKey, rollKey, setApiAccess } from '../src/index.ts';
import { ApiKeyStore, openKeyStore, type OpenedKeyStore } from '../src/key-store.ts';
import type { AccountsDatabase } from '../src/repository.ts';
import { createRedis } from '@ots/shared/redis';

const VIEWER = '{ viewer { account { id } apiKey { id } } }';
const logger = createLogger('key-cache-test', 'silent');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function ask(stack: TestStack, url: string, apiKey: string): Promise<HttpResult> {
  return stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': apiKey }, url);
}

/** How long after `since` every gateway in `urls` first answered `apiKey` with `status` (msUntilEvery). */
function msUntilAll(stack: TestStack, urls: string[], apiKey: string, status: number, since: number): Promise<number> {
  return msUntilEvery(urls, async (url) => (await ask(stack, url, apiKey)).status === status, since);
}

async function statusesOf(stack: TestStack, urls: string[], apiKey: string): Promise<number[]> {
  return Promise.all(urls.map(async (url) => (await ask(stack, url, apiKey)).status));
}

/** A second gateway over the same database and Redis, with its own key store (its own in-process cache). */
async function startSecondGateway(stack: TestStack): Promise<{ gateway: RunningServer; keys: OpenedKeyStore }> {
  const keys = openKeyStore(stack.config, logger, { listen: true });
  const gateway = await startGateway({ config: stack.config, keyStore: keys.keyStore, logger, port: 0, isReady: async () => true });
  return { gateway, keys };
}

describe('two gateway instances sharing the database and Redis', () => {
  let stack: TestStack;
  let second: { gateway: RunningServer; keys: OpenedKeyStore };
  let redis: Redis;
  let urls: string[];

  beforeAll(async () => {
    stack = await startStack({ env: { FAILED_AUTH_BURST: '10000' } });
    second = await startSecondGateway(stack);
    redis = new Redis(stack.config.redisUrl!);
    await stack.untilKeyStoresListen(2);
    urls = [stack.gatewayUrl, second.gateway.url];
  });

  afterAll(async () => {
    await second?.gateway.close();
    await second?.keys.close();
    redis?.disconnect();
    await stack?.close();
  });

  /** Both caches warm: each gateway has just looked the key up. */
  async function warm(apiKey: string) {
    expect(await statusesOf(stack, urls, apiKey)).toEqual([200, 200]);
    expect(await statusesOf(stack, urls, apiKey)).toEqual([200, 200]);
  }

  it('a revoked key is refused by both within 1 s, and stays refused', async () => {
    const { apiKeyId, apiKey } = await stack.createAccountWithKey('Revoked');
    await warm(apiKey);
    await revokeKey(stack.operator, { keyId: apiKeyId });
    const revokedAt = Date.now();
    expect(await msUntilAll(stack, urls, apiKey, 401, revokedAt)).toBeLessThanOrEqual(1_000);
    await sleep(Math.max(0, revokedAt + 1_300 - Date.now()));
    expect(await statusesOf(stack, urls, apiKey)).toEqual([401, 401]);
  });

  it('disabling API access gives 403 on both within 1 s; enabling it again gives 200 within 1 s', async () => {
    const { accountId, apiKey } = await stack.createAccountWithKey('Disabled');
    await warm(apiKey);
    await setApiAccess(stack.operator, { accountId, enabled: false });
    const disabledAt = Date.now();
    expect(await msUntilAll(stack, urls, apiKey, 403, disabledAt)).toBeLessThanOrEqual(1_000);
    await sleep(Math.max(0, disabledAt + 1_300 - Date.now()));
    expect(await statusesOf(stack, urls, apiKey)).toEqual([403, 403]);

    await setApiAccess(stack.operator, { accountId, enabled: true });
    const enabledAt = Date.now();
    expect(await msUntilAll(stack, urls, apiKey, 200, enabledAt)).toBeLessThanOrEqual(1_000);
  });

  it('a key rolled with no grace is refused by both within 1 s; its successor works on both', async () => {
    const { apiKeyId, apiKey } = await stack.createAccountWithKey('Rolled');
    await warm(apiKey);
    const rolled = await rollKey(stack.operator, { keyId: apiKeyId, graceMs: 0 });
    const rolledAt = Date.now();
    expect(await msUntilAll(stack, urls, apiKey, 401, rolledAt)).toBeLessThanOrEqual(1_000);
    expect(await statusesOf(stack, urls, rolled.apiKey)).toEqual([200, 200]);
  });

  it('an unknown key with a valid checksum is counted and cached as unknown in Redis', async () => {
    const keyStore = stack.running.keys.keyStore;
    const unknown = generateApiKey();
    const redisKey = `${stack.config.redisKeyPrefix}apikey:${hashApiKey(stack.config.apiKeyHmacSecret, unknown).toString('hex')}`;
    const before = keyStore.unknownKeyLookups;
    expect((await ask(stack, stack.gatewayUrl, unknown)).status).toBe(401);
    expect(keyStore.unknownKeyLookups).toBe(before + 1);
    const cached = await redis.get(redisKey);
    expect(cached).not.toBeNull();
    // Cached as "no such key": no key id or account in it, and nothing of the key itself.
    expect(cached).not.toMatch(/keyId|accountId/);
    expect(cached).not.toContain(unknown.slice(9));
    const ttl = await redis.ttl(redisKey);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30);
  });

  it('a mistyped key is refused without a look-up: not counted, nothing cached', async () => {
    const keyStore = stack.running.keys.keyStore;
    const { apiKey } = await stack.createAccountWithKey('Mistyped');
    const mistyped = apiKey.slice(0, 20) + (apiKey[20] === 'x' ? 'y' : 'x') + apiKey.slice(21);
    const before = keyStore.unknownKeyLookups;
    expect((await ask(stack, stack.gatewayUrl, mistyped)).status).toBe(401);
    expect(keyStore.unknownKeyLookups).toBe(before);
    expect(await redis.exists(`${stack.config.redisKeyPrefix}apikey:${hashApiKey(stack.config.apiKeyHmacSecret, mistyped).toString('hex')}`)).toBe(0);
  });

  it('a known key is cached in Redis without its owner secret: no key, no hash inside', async () => {
    const { apiKeyId, accountId, apiKey } = await stack.createAccountWithKey('Cached');
    expect((await ask(stack, stack.gatewayUrl, apiKey)).status).toBe(200);
    const hashHex = hashApiKey(stack.config.apiKeyHmacSecret, apiKey).toString('hex');
    const cached = await redis.get(`${stack.config.redisKeyPrefix}apikey:${hashHex}`);
    expect(cached).not.toBeNull();
    expect(cached).toContain(apiKeyId);
    expect(cached).toContain(accountId);
    expect(cached).not.toContain(apiKey.slice(9));
    expect(cached).not.toContain(hashHex);
  });

  it('a key that Redis answers is then answered in-process: one Redis read per in-process lifetime, not one per request', async () => {
    const db = createDatabase<AccountsDatabase>({ url: stack.databaseUrl, schema: SCHEMA, applicationName: 'local-layer-test' });
    const shared = createRedis(stack.config.redisUrl!, logger);
    const store = new ApiKeyStore({ db, redis: shared, redisKeyPrefix: stack.config.redisKeyPrefix, log: logger, localTtlMs: 300 });
    try {
      const { apiKeyId, apiKey } = await stack.createAccountWithKey('Local layer');
      const keyHash = hashApiKey(stack.config.apiKeyHmacSecret, apiKey);
      expect((await store.lookup(keyHash))?.keyId).toBe(apiKeyId);
      await sleep(350);
      const reads = vi.spyOn(shared, 'get');
      for (let request = 0; request < 5; request += 1) expect((await store.lookupCached(keyHash))?.keyId).toBe(apiKeyId);
      expect(reads).toHaveBeenCalledTimes(1);
      await sleep(350);
      expect((await store.lookupCached(keyHash))?.keyId).toBe(apiKeyId);
      expect(reads).toHaveBeenCalledTimes(2);
    } finally {
      shared.disconnect();
      await db.destroy();
    }
  });

  // A look-up that read the key from Postgres just before a revocation, and whose Redis write lands just
  // after the revocation's DEL, leaves the old record in Redis for its whole TTL (30 s). The relay below
  // holds that write back to make the interleaving certain; in production a slow network, a GC pause or
  // a busy Redis does the same.
  it('a look-up racing a revocation does not leave the revoked key usable for longer than 1 s', async () => {
    const relay = new HoldingRelay(new URL(stack.config.redisUrl!));
    await relay.start();
    const db = createDatabase<AccountsDatabase>({ url: stack.databaseUrl, schema: SCHEMA, applicationName: 'race-test' });
    const racingRedis = createRedis(relay.url, logger);
    const racing = new ApiKeyStore({ db, redis: racingRedis, redisKeyPrefix: stack.config.redisKeyPrefix, log: logger });
    try {
      await new Promise<void>((resolve) => (racingRedis.status === 'ready' ? resolve() : racingRedis.once('ready', () => resolve())));
      const account = await stack.createAccountWithKey('Race');
      const { key, apiKey } = await createKey(stack.operator, { accountId: account.accountId, name: 'racing' });

      relay.holdWrites = true;
      const looked = await racing.lookup(hashApiKey(stack.config.apiKeyHmacSecret, apiKey));
      expect(looked?.revokedAt).toBeNull();

      const revokedAt = Date.now();
      await revokeKey(stack.operator, { keyId: key.id });
      relay.release();

      await sleep(Math.max(0, revokedAt + 1_050 - Date.now()));
      expect(await statusesOf(stack, urls, apiKey)).toEqual([401, 401]);
    } finally {
      relay.release();
      racingRedis.disconnect();
      await db.destroy();
      await relay.stop();
    }
  });
});

describe('Redis stopped mid-run', () => {
  let stack: TestStack;
  let alive: { apiKey: string };
  let revoked: { apiKeyId: string; apiKey: string };
  let createdDuringOutage: string;
  let startedDuringOutage: OpenedKeyStore;

  beforeAll(async () => {
    stack = await startStack({ redis: 'proxied', env: { FAILED_AUTH_BURST: '10000' } });
    alive = await stack.createAccountWithKey('Alive');
    revoked = await stack.createAccountWithKey('Revoked in the outage');
    // Both keys are in Redis before it goes away.
    expect((await stack.graphql(alive.apiKey, VIEWER)).status).toBe(200);
    expect((await stack.graphql(revoked.apiKey, VIEWER)).status).toBe(200);
    await stack.redisProxy!.cut();
    // A gateway's key store that starts while Redis is away, as a replica restarted in the outage.
    startedDuringOutage = openKeyStore(stack.config, logger, { listen: true });
  });

  afterAll(async () => {
    await startedDuringOutage?.close();
    await stack?.close();
  });

  it('valid keys still succeed, from Postgres, without hanging', async () => {
    await sleep(1_100); // past the in-process cache
    for (let i = 0; i < 3; i += 1) {
      const started = Date.now();
      const result = await stack.graphql(alive.apiKey, VIEWER);
      expect(result.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(3_000);
    }
    const account = await stack.createAccountWithKey('New during outage');
    createdDuringOutage = account.apiKey;
    expect((await stack.graphql(createdDuringOutage, VIEWER)).status).toBe(200);
  });

  it('a key revoked during the outage is refused at once and stays refused', async () => {
    await revokeKey(stack.operator, { keyId: revoked.apiKeyId });
    expect((await stack.graphql(revoked.apiKey, VIEWER)).status).toBe(401);
    await sleep(1_100);
    expect((await stack.graphql(revoked.apiKey, VIEWER)).status).toBe(401);
  });

  it('/readyz reports the cache unreachable meanwhile', async () => {
    const response = await fetch(stack.gatewayUrl.replace(/\/graphql$/, '/readyz'));
    expect(response.status).toBe(503);
  });

  it('after Redis returns: valid keys keep working', async () => {
    await stack.redisProxy!.restore();
    const readyz = stack.gatewayUrl.replace(/\/graphql$/, '/readyz');
    const deadline = Date.now() + 8_000;
    while ((await fetch(readyz)).status !== 200) {
      if (Date.now() > deadline) throw new Error('the gateway did not reconnect to Redis');
      await sleep(100);
    }
    expect((await stack.graphql(alive.apiKey, VIEWER)).status).toBe(200);
    expect((await stack.graphql(createdDuringOutage, VIEWER)).status).toBe(200);
  });

  it('after Redis returns: a key store started during the outage follows published changes', async () => {
    await stack.untilKeyStoresListen(2);
  });

  // The revocation's DEL could not reach Redis, so Redis still holds the record cached before the
  // outage (30 s TTL). The contract: refused everywhere within 1 s, whatever the caches hold.
  it('after Redis returns: the key revoked during the outage is still refused', async () => {
    expect((await stack.graphql(revoked.apiKey, VIEWER)).status).toBe(401);
    await sleep(1_100);
    expect((await stack.graphql(revoked.apiKey, VIEWER)).status).toBe(401);
  });
});

describe('without Redis (REDIS_URL unset)', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startStack({ redis: 'none' });
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('authentication works and revocation takes effect within 1 s', async () => {
    expect(stack.config.redisUrl).toBeUndefined();
    const { apiKeyId, apiKey } = await stack.createAccountWithKey('No Redis');
    expect((await stack.graphql(apiKey, VIEWER)).status).toBe(200);
    expect((await stack.graphql(apiKey, VIEWER)).status).toBe(200);
    await revokeKey(stack.operator, { keyId: apiKeyId });
    const revokedAt = Date.now();
    expect(await msUntilAll(stack, [stack.gatewayUrl], apiKey, 401, revokedAt)).toBeLessThanOrEqual(1_000);
  });

  it('disabling takes effect within 1 s', async () => {
    const { accountId, apiKey } = await stack.createAccountWithKey('No Redis, disabled');
    expect((await stack.graphql(apiKey, VIEWER)).status).toBe(200);
    await setApiAccess(stack.operator, { accountId, enabled: false });
    const disabledAt = Date.now();
    expect(await msUntilAll(stack, [stack.gatewayUrl], apiKey, 403, disabledAt)).toBeLessThanOrEqual(1_000);
  });

  it('/readyz is ready without a cache configured', async () => {
    expect((await fetch(stack.gatewayUrl.replace(/\/graphql$/, '/readyz'))).status).toBe(200);
  });
});

/**
 * A TCP relay to Redis that, while `holdWrites` is set, holds back a connection's traffic from the
 * first SET command on, until `release()`: the commands still reach Redis, only later and in order.
 */
class HoldingRelay {
  holdWrites = false;
  private server: net.Server | undefined;
  private readonly held: { upstream: net.Socket; chunks: Buffer[]; holding: boolean }[] = [];
  private readonly sockets = new Set<net.Socket>();
  private port = 0;

  constructor(private readonly target: URL) {}

  get url(): string {
    const url = new URL(this.target.toString());
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(Number(this.target.port || 6379), this.target.hostname);
      const state = { upstream, chunks: [] as Buffer[], holding: false };
      this.held.push(state);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => socket.destroy());
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      upstream.pipe(client);
      client.on('data', (chunk: Buffer) => {
        if (!state.holding && this.holdWrites && /\$3\r\nset\r\n/i.test(chunk.toString('latin1'))) state.holding = true;
        if (state.holding) state.chunks.push(chunk);
        else upstream.write(chunk);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  release(): void {
    this.holdWrites = false;
    for (const state of this.held) {
      for (const chunk of state.chunks.splice(0)) state.upstream.write(chunk);
      state.holding = false;
    }
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
