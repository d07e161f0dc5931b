import { once } from 'node:events';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { useStack } from '../../testing/fixture.ts';
import { openKeyStore, type OpenedKeyStore } from '@ots/accounts';
import { startGateway } from '../src/server.ts';

/** Contract section 8: the per-key rate is the key's, however many gateway instances serve it. */
const VIEWER = '{ viewer { apiKey { id } } }';
const t = useStack({ redis: 'proxied', env: { RATE_LIMIT_BURST: '6', RATE_LIMIT_PER_SECOND: '1' }, accounts: [] });
let second: { gateway: RunningServer; keys: OpenedKeyStore };

beforeAll(async () => {
  const logger = createLogger('second-gateway', 'silent');
  const keys = openKeyStore(t.stack.config, logger, { listen: true });
  const gateway = await startGateway({ config: t.stack.config, keyStore: keys.keyStore, redis: keys.redis, logger, port: 0, isReady: async () => true });
  second = { gateway, keys };
  // Until its connection is up an instance limits on its own, which would hand this test's key a
  // second bucket; the first instance was already ready when the stack started.
  if (keys.redis && keys.redis.status !== 'ready') await once(keys.redis, 'ready');
});

afterAll(async () => {
  await second?.gateway.close();
  await second?.keys.close();
});

const status = (url: string, apiKey: string) =>
  t.stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': apiKey }, url).then((r) => r.status);

describe('the per-key rate limit with two gateway instances', () => {
  it('is shared through Redis: a burst of 6 spread over both instances leaves no token on either', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const statuses = [];
    for (let i = 0; i < 3; i += 1) {
      statuses.push(await status(t.stack.gatewayUrl, apiKey));
      statuses.push(await status(second.gateway.url, apiKey));
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await status(t.stack.gatewayUrl, apiKey)).toBe(429);
    expect(await status(second.gateway.url, apiKey)).toBe(429);
  });

  it('still limits, per instance, while Redis is unreachable', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    await t.stack.redisProxy!.cut();
    try {
      const statuses = [];
      for (let i = 0; i < 7; i += 1) statuses.push(await status(t.stack.gatewayUrl, apiKey));
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429]);
    } finally {
      await t.stack.redisProxy!.restore();
    }
  });
});

describe('while Redis is unreachable, with two gateway replicas', () => {
  // A token every 50 s: nothing refills while a test runs, so every 200 is a token of the burst.
  const limits = { rateLimitPerSecond: 0.02, rateLimitBurst: 4, gatewayReplicas: 2 };
  const pair: { gateway: RunningServer; keys: OpenedKeyStore }[] = [];

  beforeAll(async () => {
    const config = { ...t.stack.config, limits: { ...t.stack.config.limits, ...limits } };
    for (const name of ['replica-a', 'replica-b']) {
      const logger = createLogger(name, 'silent');
      const keys = openKeyStore(config, logger, { listen: true });
      const gateway = await startGateway({ config, keyStore: keys.keyStore, redis: keys.redis, logger, port: 0, isReady: async () => true });
      pair.push({ gateway, keys });
    }
    await redisReady();
  });

  afterAll(async () => {
    for (const { gateway, keys } of pair) {
      await gateway.close();
      await keys.close();
    }
  });

  const redisReady = () => Promise.all(pair.map(({ keys }) => (keys.redis && keys.redis.status !== 'ready' ? once(keys.redis, 'ready') : undefined)));
  /** Alternates between the replicas, as a round-robin balancer does. */
  const alternating = async (apiKey: string, count: number) => {
    const statuses = [];
    for (let i = 0; i < count; i += 1) statuses.push(await status(pair[i % 2]!.gateway.url, apiKey));
    return statuses;
  };

  it('the replicas together grant one burst, not one each', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    await t.stack.redisProxy!.cut();
    try {
      expect(await alternating(apiKey, 6)).toEqual([200, 200, 200, 200, 429, 429]);
    } finally {
      await t.stack.redisProxy!.restore();
      await redisReady();
    }
  });

  it('neither the outage nor the recovery hands out a fresh burst, even when the shared bucket expired meanwhile', async () => {
    const { apiKey, apiKeyId } = await t.stack.createAccountWithKey();
    expect(await alternating(apiKey, 5)).toEqual([200, 200, 200, 200, 429]);
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
