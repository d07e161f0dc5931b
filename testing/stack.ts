import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { loadConfig, type Config, type ServiceName } from '@ots/shared/config';
import { launchStack, migrateAll, type RunningStack } from '../scripts/stack.ts';
import { createAccount, createKey, operatorScope, type ApiKeyStore, type OperatorScope } from '@ots/accounts';
import { createLogger, type Logger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { createTestDatabase } from '@ots/shared/testing/database';
import { startGateway } from '@ots/gateway/server';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';

export interface StackOptions {
  /** Extra environment for loadConfig, e.g. { OUTBOX_RELAY_INTERVAL_MS: '200' }. */
  env?: Record<string, string>;
  /**
   * `direct` (default): the test Redis. `proxied`: through a relay the test can cut (`redisProxy`).
   * `none`: REDIS_URL unset, the in-process cache alone.
   */
  redis?: 'direct' | 'proxied' | 'none';
}

export interface HttpResult {
  status: number;
  headers: Headers;
  // The parsed JSON body: tests read what they assert on.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON, read field by field by the assertions
  body: any;
}

export interface TestStack {
  gatewayUrl: string;
  urls: Record<ServiceName, string>;
  databaseUrl: string;
  config: Config;
  running: RunningStack;
  /** The operator's scope, as the CLI's: its use cases run against this stack's database and cache. */
  operator: OperatorScope;
  redisProxy: TcpProxy | undefined;
  createAccountWithKey(name?: string): Promise<{ accountId: string; apiKeyId: string; apiKey: string }>;
  /**
   * Waits until `count` key stores follow this stack's key invalidations in Redis, so that a test's
   * key change reaches each of them by the push and not only by the poll. Throws after 30 s: a full
   * test run loads both cores, and the deadline bounds a hang, it measures nothing.
   */
  untilKeyStoresListen(count: number): Promise<void>;
  /**
   * Another gateway over this stack's subgraphs and key store, on a port of its own: the stack's
   * configuration with `config` over it, silent unless given a logger, the console on `consoleClock`
   * if given, and `keyStore` in place of the stack's (one wrapped to slow its look-ups, say). The caller closes it.
   */
  anotherGateway(options?: { config?: Partial<Config>; logger?: Logger; consoleClock?: () => number; keyStore?: ApiKeyStore }): Promise<RunningServer>;
  /** POST a GraphQL request to the gateway with X-API-Key (omitted when apiKey is undefined). */
  graphql(apiKey: string | undefined, query: string, variables?: Record<string, unknown>): Promise<HttpResult>;
  /** POST any body with any headers to a URL (default the gateway). */
  post(body: string, headers: Record<string, string>, url?: string): Promise<HttpResult>;
  stopService(name: ServiceName): Promise<void>;
  startService(name: ServiceName): Promise<void>;
  close(): Promise<void>;
}

/** A new account with one key, made through the admin operations as the CLI makes them. */
export async function createAccountWithKey(operator: OperatorScope, name: string) {
  const account = await createAccount(operator, { name });
  const { key, apiKey } = await createKey(operator, { accountId: account.id, name: 'test' });
  return { accountId: account.id, apiKeyId: key.id, apiKey };
}

async function untilKeyStoresListen(config: Config, channel: string, count: number): Promise<void> {
  if (!config.redisUrl) throw new Error('this stack runs without Redis');
  const redis = new Redis(config.redisUrl);
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [, subscribers] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
      if (Number(subscribers) >= count) return;
      if (Date.now() > deadline) throw new Error(`only ${subscribers} of ${count} key stores follow ${channel}`);
      await sleep(20);
    }
  } finally {
    redis.disconnect();
  }
}

/** A fresh database, migrated, with the five subgraphs and the gateway running in this process on free ports. */
export async function startStack(options: StackOptions = {}): Promise<TestStack> {
  const database = await createTestDatabase();
  const redisMode = options.redis ?? 'direct';
  let redisUrl: string | undefined = inject('redisUrl');
  let redisProxy: TcpProxy | undefined;
  if (redisMode === 'none') redisUrl = undefined;
  if (redisMode === 'proxied') {
    const target = new URL(inject('redisUrl'));
    redisProxy = new TcpProxy(target.hostname, Number(target.port || 6379));
    await redisProxy.start();
    target.hostname = '127.0.0.1';
    target.port = String(redisProxy.port);
    redisUrl = target.toString();
  }
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    DATABASE_URL: database.url,
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    REDIS_KEY_PREFIX: `test:${randomBytes(4).toString('hex')}:`,
    ...options.env,
  });
  let running: RunningStack;
  try {
    await migrateAll(config);
    running = await launchStack(config, { freePorts: true });
  } catch (error) {
    // A stack that could not start leaves no database behind.
    await redisProxy?.cut();
    await database.drop();
    throw error;
  }
  const operator = operatorScope(running.keys, config, createLogger('test-operator', 'silent'));

  const post = async (body: string, headers: Record<string, string>, url = running.gateway.url): Promise<HttpResult> => {
    const response = await fetch(url, { method: 'POST', headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Non-JSON bodies are returned as text for the test to inspect.
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };

  return {
    gatewayUrl: running.gateway.url,
    get urls() {
      return running.config.subgraphUrls;
    },
    databaseUrl: database.url,
    config: running.config,
    running,
    operator,
    redisProxy,
    createAccountWithKey: (name = 'Test account') => createAccountWithKey(operator, name),
    untilKeyStoresListen: (count) => untilKeyStoresListen(running.config, running.keys.keyStore.channel, count),
    anotherGateway: (options = {}) =>
      startGateway({
        config: { ...running.config, ...options.config },
        keyStore: options.keyStore ?? running.keys.keyStore,
        logger: options.logger ?? createLogger('another-gateway', 'silent'),
        port: 0,
        isReady: async () => true,
        consoleClock: options.consoleClock,
      }),
    graphql: (apiKey, query, variables) =>
      post(JSON.stringify({ query, variables }), {
        'content-type': 'application/json',
        ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }),
      }),
    post,
    stopService: (name) => running.stopService(name),
    startService: (name) => running.startService(name),
    close: async () => {
      await running.close();
      await redisProxy?.cut();
      await database.drop();
    },
  };
}
