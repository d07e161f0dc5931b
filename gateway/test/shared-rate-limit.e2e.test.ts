import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createLogger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { useStack } from '../../testing/fixture.ts';
import { openKeyStore, type OpenedKeyStore } from '@ots/accounts';
import { startGateway } from '../src/server.ts';

/** Contract section 8: the per-key rate is the key's, however many gateway instances serve it. */
const VIEWER = '{ viewer { apiKey { id } } }';
const t = useStack({ redis: 'proxied', accounts: [] });
// A burst of 6 and a token every 50 s: nothing refills while a test runs, so every 200 is a token of the burst.
const limits = { rateLimitPerSecond: 0.02, rateLimitBurst: 6, gatewayReplicas: 2 };
const replicas: { gateway: RunningServer; keys: OpenedKeyStore }[] = [];

// Until its connection is up an instance limits on its own, which would hand a test's key a bucket of
// its own. Polled: a connection attempt may fail ('error') before one succeeds.
const redisReady = () =>
  vi.waitFor(() => expect(replicas.map(({ keys }) => keys.redis?.status)).toEqual(['ready', 'ready']), { timeout: 15_000, interval: 50 });

beforeAll(async () => {
  const config = { ...t.stack.config, limits: { ...t.stack.config.limits, ...limits } };
  for (const name of ['replica-a', 'replica-b']) {
    const logger = createLogger(name, 'silent');
    const keys = openKeyStore(config, logger, { listen: true });
    const gateway = await startGateway({ config, keyStore: keys.keyStore, redis: keys.redis, logger, port: 0, isReady: async () => true });
    replicas.push({ gateway, keys });
  }
  await redisReady();
});

afterAll(async () => {
  for (const { gateway, keys } of replicas) {
    await gateway.close();
    await keys.close();
  }
});

const status = (url: string, apiKey: string) =>
  t.stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': apiKey }, url).then((r) => r.status);

/** Alternates between the two instances, as a round-robin balancer does. */
async function alternating(apiKey: string, count: number): Promise<number[]> {
  const statuses = [];
  for (let i = 0; i < count; i += 1) statuses.push(await status(replicas[i % 2]!.gateway.url, apiKey));
  return statuses;
}

describe('the per-key rate limit with two gateway instances', () => {
  it('is shared through Redis: a burst of 6 spread over both instances leaves no token on either', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    expect(await alternating(apiKey, 8)).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  });
});

describe('while Redis is unreachable', () => {
  it('each instance limits on its own with its share, so together they grant one burst, not one each', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    await t.stack.redisProxy!.cut();
    try {
      expect(await alternating(apiKey, 8)).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await t.stack.redisProxy!.restore();
      await redisReady();
    }
  });

  it('neither the outage nor the recovery hands out a fresh burst, even when the shared bucket expired meanwhile', async () => {
    const { apiKey, apiKeyId } = await t.stack.createAccountWithKey();
    expect(await alternating(apiKey, 7)).toEqual([200, 200, 200, 200, 200, 200, 429]);
    await t.stack.redisProxy!.cut();
    try {
      expect(await alternating(apiKey, 2)).toEqual([429, 429]);
    } finally {
      await t.stack.redisProxy!.restore();
    }
    // What Redis does to a bucket idle past its time to refill (PEXPIRE), here at once.
    const direct = new Redis(inject('redisUrl'));
    try {
      await direct.del(`${t.stack.config.redisKeyPrefix}ratelimit:api-key:${apiKeyId}`);
    } finally {
      direct.disconnect();
    }
    await redisReady();
    expect(await alternating(apiKey, 2)).toEqual([429, 429]);
  });
});
