import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { createDatabase } from '@ots/shared/db';
import { createLogger } from '@ots/shared/logger';
import { createRedis } from '@ots/shared/redis';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { useStack } from '../../testing/fixture.ts';
import { ACCOUNTS_SCHEMA as SCHEMA, generateApiKey, createKey, setApiAccess, ApiKeyStore, type AccountsDatabase } from '@ots/accounts';
import { startGateway } from '../src/server.ts';

/**
 * Contract section 5: a guesser is refused and its cost bounded, but a valid, live key from the same
 * address (clients behind one proxy or NAT) is never refused because of the guesser's failures.
 */
const VIEWER = '{ viewer { account { name } } }';
const KEY_LOOKUP_CONCURRENCY = 3;
const FAILED_AUTH_PER_SECOND = 1;

/** Counts the key look-ups that reach Postgres, and the most that ran at once. */
class KeyQueryCounter implements KyselyPlugin {
  count = 0;
  running = 0;
  mostAtOnce = 0;
  private readonly counted = new WeakSet<object>();

  transformQuery({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    if (node.kind === 'SelectQueryNode' && JSON.stringify(node).includes('"api_keys"')) {
      this.counted.add(queryId);
      this.count += 1;
      this.running += 1;
      this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    }
    return node;
  }

  async transformResult({ queryId, result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.counted.has(queryId)) this.running -= 1;
    return result;
  }
}

const t = useStack({
  env: { FAILED_AUTH_PER_SECOND: String(FAILED_AUTH_PER_SECOND), FAILED_AUTH_BURST: '30', KEY_LOOKUP_CONCURRENCY: String(KEY_LOOKUP_CONCURRENCY) },
  accounts: [],
});
let gateway: RunningServer;
let keyStore: ApiKeyStore;
const counter = new KeyQueryCounter();
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  // A gateway of its own, whose key store reads Postgres through the counter.
  const log = createLogger('failed-auth', 'silent');
  const db = createDatabase<AccountsDatabase>({ url: t.stack.databaseUrl, schema: SCHEMA, applicationName: 'counted-key-store' });
  const redis = createRedis(t.stack.config.redisUrl!, log);
  keyStore = new ApiKeyStore({ db: db.withPlugin(counter), redis, redisKeyPrefix: t.stack.config.redisKeyPrefix, log });
  await keyStore.start();
  gateway = await startGateway({ config: t.stack.config, keyStore, logger: log, port: 0, isReady: async () => true });
  closers.push(() => gateway.close(), () => keyStore.close(), async () => redis.disconnect(), () => db.destroy());
});
afterAll(async () => {
  for (const close of closers) await close();
});

async function viewer(apiKey: string): Promise<number> {
  const result = await t.stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': apiKey }, gateway.url);
  return result.status;
}

/** Sends every key from this one address, `parallel` requests at a time; the statuses in order. */
async function flood(keys: string[], parallel: number): Promise<number[]> {
  const statuses: number[] = new Array(keys.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < keys.length) {
        const index = next++;
        statuses[index] = await viewer(keys[index]!);
      }
    }),
  );
  return statuses;
}

const tally = (statuses: number[]) => statuses.reduce<Record<number, number>>((counts, status) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {});

describe('failed authentications never lock out a valid key', () => {
  it('after 1,000 made-up keys from one address, a valid key new to every cache still works from it; the guesser stays refused', async () => {
    const { accountId } = await t.stack.createAccountWithKey('Behind the same proxy');
    const guesses = Array.from({ length: 1000 }, () => generateApiKey());

    // A valid key issued during the flood, and sent in the middle of it, from the same address.
    const flooding = flood(guesses, 20);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const { apiKey: issuedDuring } = await createKey(t.stack.operator, { accountId, name: 'issued during the flood' });
    const duringFlood = viewer(issuedDuring);
    const statuses = await flooding;

    const counts = tally(statuses);
    expect(counts[200]).toBeUndefined();
    // The first failures are told 401; once over its limit (30 at once, 1 a second) the address gets 429.
    expect(counts[401]).toBeGreaterThanOrEqual(30);
    expect(counts[429]).toBeGreaterThan(800);
    expect(await duringFlood).toBe(200);

    // Uncached: created after the flood, never sent before.
    const { apiKey: fresh } = await createKey(t.stack.operator, { accountId, name: 'fresh' });
    const before = counter.count;
    expect(await viewer(fresh)).toBe(200);
    expect(counter.count - before).toBe(1);
    // The guesser is still refused: of 5 more guesses, at most the one a second of refill is told 401.
    const more = tally(await flood(Array.from({ length: 5 }, () => generateApiKey()), 1));
    expect(more[429]).toBeGreaterThanOrEqual(4);
  });

  it("a valid key of an account with API access off is told 403 from an address whose failures are spent, not 429", async () => {
    const { accountId, apiKey } = await t.stack.createAccountWithKey('Access off, behind the same proxy');
    await setApiAccess(t.stack.operator, { accountId, enabled: false });
    const guesses = tally(await flood(Array.from({ length: 60 }, () => generateApiKey()), 10));
    expect(guesses[429]).toBeGreaterThan(0);
    const refused = await t.stack.post(JSON.stringify({ query: VIEWER }), { 'content-type': 'application/json', 'x-api-key': apiKey }, gateway.url);
    expect(refused.status).toBe(403);
    // The request took a token of the key's own rate limit, and says so.
    expect(refused.headers.get('ratelimit')).toMatch(/^"api-key";r=\d{1,3};t=\d+$/);
  });

  it('Postgres look-ups stay bounded: at most one per distinct guess, a bounded number at once, none for a repeated guess', async () => {
    const guesses = Array.from({ length: 300 }, () => generateApiKey());
    const before = counter.count;
    counter.mostAtOnce = 0;
    await flood(guesses, 50);
    expect(counter.count - before).toBeLessThanOrEqual(guesses.length);
    expect(counter.mostAtOnce).toBeLessThanOrEqual(KEY_LOOKUP_CONCURRENCY);

    // The same guesses again: the negative cache answers them all.
    const afterFirstRound = counter.count;
    const started = Date.now();
    const statuses = tally(await flood(guesses, 50));
    expect(counter.count).toBe(afterFirstRound);
    expect(statuses[401] ?? 0).toBeLessThanOrEqual(Math.ceil(((Date.now() - started) / 1000) * FAILED_AUTH_PER_SECOND) + 1);
    expect(statuses[429]).toBeGreaterThan(0);

    // Malformed keys and keys with a bad checksum never reach a cache or Postgres.
    const mistyped = guesses.slice(0, 50).map((key) => `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`);
    await flood(mistyped, 10);
    expect(counter.count).toBe(afterFirstRound);
  });
});
