import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { loadConfig, SERVICE_NAMES, type Config, type ServiceName } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { RoundRobinProxy } from '@ots/shared/testing/round-robin-proxy';
import { openKeyStore, operatorScope, type OperatorScope, type OpenedKeyStore } from '@ots/accounts';
import { migrateAll } from '../scripts/stack.ts';
import { createAccountWithKey } from './stack.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export type Part = ServiceName | 'gateway';
const PARTS: readonly Part[] = [...SERVICE_NAMES, 'gateway'];
const ENTRY: Record<Part, string> = {
  accounts: 'services/accounts/src/main.ts',
  orders: 'services/orders/src/main.ts',
  strategies: 'services/strategies/src/main.ts',
  fills: 'services/fills/src/main.ts',
  events: 'services/events/src/main.ts',
  gateway: 'gateway/src/main.ts',
};

interface Replica {
  port: number;
  metricsPort: number;
  process: ChildProcess | undefined;
  output: string;
}

export interface ReplicatedStack {
  /** The gateways' balancer: each request to the next gateway replica. */
  gatewayUrl: string;
  /** Each gateway replica's own URL, for checks that must hold on every one. */
  gatewayReplicaUrls: string[];
  /** How many replicas each part runs. */
  replicaCount: number;
  /** Each subgraph's balancer (its /graphql URL), for what one subgraph sends another. */
  subgraphUrls: Record<ServiceName, string>;
  databaseUrl: string;
  /** Test-side configuration (same database, Redis and prefix as the processes). */
  config: Config;
  /** The operator's scope, as the CLI's: its use cases run against this stack's database and cache. */
  operator: OperatorScope;
  createAccountWithKey(name?: string): Promise<{ accountId: string; apiKeyId: string; apiKey: string }>;
  /** SIGKILL: no drain, no goodbye, as a crashed node or an evicted pod. */
  kill(part: Part, replica: number): void;
  /** Starts a killed replica again on its port. */
  restart(part: Part, replica: number): Promise<void>;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A free port, held open until just before its process starts: a port that was only asked for and
 * released could meanwhile go to a balancer's port 0, or to a started replica's outgoing connection.
 */
async function reservePort(held: net.Server[]): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  held.push(server);
  return (server.address() as net.AddressInfo).port;
}

/**
 * The whole service as production runs it, two replicas at a time: a fresh migrated database, and
 * for the gateway and each subgraph two processes of its own (`node --import tsx <main.ts>`) behind
 * a round-robin balancer; every process reaches the subgraphs through their balancers.
 */
export async function startReplicatedStack(options: { env?: Record<string, string>; replicas?: number } = {}): Promise<ReplicatedStack> {
  const replicaCount = options.replicas ?? 2;
  const database: TestDatabase = await createTestDatabase();
  const redisKeyPrefix = `test:${randomBytes(4).toString('hex')}:`;
  const replicas = new Map<Part, Replica[]>();
  const proxies = new Map<Part, RoundRobinProxy>();
  let keys: OpenedKeyStore | undefined;

  const environment = (part: Part, replica: Replica): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    REDIS_KEY_PREFIX: redisKeyPrefix,
    [`${part.toUpperCase()}_PORT`]: String(replica.port),
    METRICS_PORT: String(replica.metricsPort),
    ...Object.fromEntries(SERVICE_NAMES.map((name) => [`${name.toUpperCase()}_URL`, `${proxies.get(name)!.url}/graphql`])),
    ...options.env,
  });

  const launch = async (part: Part, replica: Replica) => {
    replica.output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY[part]], { cwd: ROOT, env: environment(part, replica), stdio: ['ignore', 'pipe', 'pipe'] });
    replica.process = child;
    child.stdout!.on('data', (chunk: Buffer) => (replica.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (replica.output += chunk.toString()));
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${part} exited with ${child.exitCode}:\n${replica.output}`);
      const ready = await fetch(`http://127.0.0.1:${replica.port}/readyz`).then((response) => response.ok, () => false);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`${part} was not ready within 120 s:\n${replica.output}`);
      await sleep(200);
    }
  };

  const stopAll = async () => {
    const running = [...replicas.values()].flat().filter((replica) => replica.process && replica.process.exitCode === null && replica.process.signalCode === null);
    await Promise.all(
      running.map(
        (replica) =>
          new Promise<void>((resolve) => {
            replica.process!.once('exit', () => resolve());
            replica.process!.kill('SIGTERM');
          }),
      ),
    );
    for (const proxy of proxies.values()) await proxy.close();
    await keys?.close();
  };

  const held = new Map<Part, net.Server[]>(PARTS.map((part) => [part, []]));
  const releasePorts = (parts: readonly Part[]) =>
    Promise.all(parts.flatMap((part) => held.get(part)!.splice(0)).map((server) => new Promise((resolve) => server.close(resolve))));

  try {
    await migrateAll({ databaseUrl: database.url, serviceDatabaseUrls: {} });
    for (const part of PARTS) {
      const list: Replica[] = [];
      for (let i = 0; i < replicaCount; i += 1) list.push({ port: await reservePort(held.get(part)!), metricsPort: await reservePort(held.get(part)!), process: undefined, output: '' });
      replicas.set(part, list);
      const proxy = new RoundRobinProxy(list.map((replica) => ({ host: '127.0.0.1', port: replica.port })));
      await proxy.start();
      proxies.set(part, proxy);
    }
    // Subgraphs first (the gateway composes nothing at start, but its readiness wants them), each
    // part's replicas side by side.
    for (const part of PARTS) {
      await releasePorts([part]);
      await Promise.all(replicas.get(part)!.map((replica) => launch(part, replica)));
    }
  } catch (error) {
    await releasePorts(PARTS);
    await stopAll();
    await database.drop();
    throw error;
  }

  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: database.url, REDIS_URL: inject('redisUrl'), REDIS_KEY_PREFIX: redisKeyPrefix });
  const log = createLogger('replicated-stack', 'silent');
  keys = openKeyStore(config, log, { listen: false });
  const operator = operatorScope(keys, config, log);

  return {
    gatewayUrl: `${proxies.get('gateway')!.url}/graphql`,
    gatewayReplicaUrls: replicas.get('gateway')!.map((replica) => `http://127.0.0.1:${replica.port}/graphql`),
    replicaCount,
    subgraphUrls: Object.fromEntries(SERVICE_NAMES.map((name) => [name, `${proxies.get(name)!.url}/graphql`])) as Record<ServiceName, string>,
    databaseUrl: database.url,
    config,
    operator,
    createAccountWithKey: (name = 'Replicated') => createAccountWithKey(operator, name),
    kill: (part, index) => {
      replicas.get(part)![index]!.process!.kill('SIGKILL');
    },
    restart: async (part, index) => {
      const replica = replicas.get(part)![index]!;
      if (replica.process && replica.process.exitCode === null && replica.process.signalCode === null) {
        await new Promise((resolve) => replica.process!.once('exit', resolve));
      }
      await launch(part, replica);
    },
    close: async () => {
      await stopAll();
      await database.drop();
    },
  };
}
