import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
