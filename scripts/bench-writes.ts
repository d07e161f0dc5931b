import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Agent, request } from 'undici';
import { loadConfig, type Config } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { freePort } from '@ots/shared/testing/ports';
import { createAccount, createKey, openKeyStore, operatorScope } from '@ots/accounts';
import { composeAndWrite } from '@ots/gateway/compose';
import { createBenchDatabase } from './bench-database.ts';
import { benchServerEnv, waitReady } from './bench-process.ts';
import { percentile } from './percentile.ts';
import { CANCEL, ORDER_INPUT, RECORD_FILL, SUBMIT, VIEWER, type Operation } from './write-requests.ts';

/**
 * The write section of `npm run bench`, measured as a client measures it (contract section 8): the
 * service runs in processes of its own, started by this one, which only sends requests, as any
 * client does; a load generator inside the server's process shares its event loop and squeezes every
 * ratio towards 1. Two layouts: `npm start`'s (gateway and five subgraphs in one process) and one
 * process per service. `viewer`, `submitOrder`, `cancelOrderSubmission` and `recordFill` with 8
 * concurrent clients, the writes from one account and from 8 accounts, each `recordFill` on an order
 * of its own (a venue's fills, spread over many orders), and separately 8 clients filling one order.
 * Batches are interleaved, a batch of `viewer` before each batch of writes, so that machine noise
 * falls on every figure alike. For each figure also the CPU time per request of every server process
 * and of the database's backends, read from /proc around each batch.
 */

const CLIENTS = 8;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const PER_CLIENT = Number(process.env.BENCH_REQUESTS_PER_CLIENT ?? 20);
/** The pause before each batch: the outbox relays empty what the batch before left them. */
const SETTLE_MS = 150;

const WRITES: readonly Operation[] = ['submitOrder', 'cancelOrderSubmission', 'recordFill'];
const SERVICES = ['accounts', 'events', 'strategies', 'orders', 'fills'] as const;

interface Layout {
  name: string;
  /** Each process: a label and the script it runs. */
  processes: { label: string; script: string }[];
}

const LAYOUTS: Layout[] = [
  { name: 'npm start layout (one process)', processes: [{ label: 'server', script: 'scripts/bench-server.ts' }] },
  {
    name: 'one process per service',
    processes: [
      ...SERVICES.map((service) => ({ label: service, script: `services/${service}/src/main.ts` })),
      { label: 'gateway', script: 'gateway/src/main.ts' },
    ],
  },
];

/** User plus system CPU of a process so far, in ms (0 once it is gone). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

interface RunningLayout {
  gatewayUrl: string;
  processes: { label: string; child: ChildProcess }[];
  stop(): Promise<void>;
}

async function startLayout(layout: Layout, config: Config): Promise<RunningLayout> {
  const { ports, env } = await benchServerEnv(config);
  const processes: RunningLayout['processes'] = [];
  for (const { label, script } of layout.processes) {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', './shared/src/tracing-preload.ts', script], {
      env: { ...env, METRICS_PORT: String(await freePort()) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    processes.push({ label, child });
  }
  const stop = async () => {
    for (const { child } of [...processes].reverse()) {
      if (child.exitCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  };
  try {
    // The subgraphs first, then the gateway: each answers /readyz once it serves.
    for (const { label, child } of processes) await waitReady(`http://127.0.0.1:${label === 'server' ? ports.gateway : ports[label]}/readyz`, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { gatewayUrl: `http://127.0.0.1:${ports.gateway}/graphql`, processes, stop };
}

interface Client {
  apiKey: string;
  /** Orders this client submitted, to cancel. */
  submitted: string[];
  /** Orders of their own for the next batch of fills, one per fill. */
  toFill: string[];
  /** The order every fill of the one-order case goes to. */
  oneOrder?: string;
}

function benchClient(gatewayUrl: string) {
  const agent = new Agent({ connections: CLIENTS * 2, keepAliveTimeout: 30_000 });
  // Execution ids of this client only: every layout's run records fills in the same database.
  const run = randomUUID();
  let executions = 0;
  const send = async (apiKey: string, query: string, variables?: Record<string, unknown>) => {
    const response = await request(gatewayUrl, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.body.json()) as { errors?: unknown; data?: Record<string, { error?: unknown } | null> };
    const payload = body.data ? Object.values(body.data)[0] : undefined;
    if (response.statusCode !== 200 || body.errors || (payload && payload.error)) throw new Error(`bench request failed: ${JSON.stringify(body)}`);
    return body as { data: Record<string, Record<string, { id: string } | null>> };
  };
  const submit = async (apiKey: string, input: Record<string, unknown> = ORDER_INPUT) =>
    (await send(apiKey, SUBMIT, { input })).data.submitOrder!.orderSubmission!.id;
  const fill = (apiKey: string, orderSubmissionId: string) => {
    executions += 1;
    return send(apiKey, RECORD_FILL, { input: { orderSubmissionId, executionId: `bench-${run}-${executions}`, quantity: '1', price: '187.25' } });
  };
  const requestOf = (operation: Operation | 'recordFill one order', client: Client): (() => Promise<unknown>) => {
    switch (operation) {
      case 'viewer':
        return () => send(client.apiKey, VIEWER);
      case 'submitOrder':
        return async () => client.submitted.push(await submit(client.apiKey));
      case 'cancelOrderSubmission':
        return () => send(client.apiKey, CANCEL, { id: client.submitted.pop() });
      case 'recordFill':
        return () => fill(client.apiKey, client.toFill.pop()!);
      case 'recordFill one order':
        return () => fill(client.apiKey, client.oneOrder!);
    }
  };
  return { submit, requestOf, close: () => agent.close() };
}

interface Figure {
  samples: number[];
  seconds: number;
  cpu: Map<string, number>;
  /** Requests that failed (not in the samples). */
  failed: number;
}

async function benchLayout(layout: Layout, config: Config, apiKeys: string[], pool: pg.Pool, databaseName: string): Promise<void> {
  const running = await startLayout(layout, config);
  const client = benchClient(running.gatewayUrl);
  try {
    const makeClients = (keys: string[]): Client[] => keys.map((apiKey) => ({ apiKey, submitted: [], toFill: [] }));
    const scenarios = { 'one account': makeClients(Array.from({ length: CLIENTS }, () => apiKeys[0]!)), '8 accounts': makeClients(apiKeys) };
    type Scenario = keyof typeof scenarios;
    const oneOrder = await client.submit(apiKeys[0]!, { ...ORDER_INPUT, quantity: String(CLIENTS * (ROUNDS + 1) * PER_CLIENT + 100) });
    for (const each of scenarios['one account']) each.oneOrder = oneOrder;

    // The processes whose CPU is counted: the layout's, the database's backends for this database, and this client.
    // Keyed by process; the database's backends each by pid (a pool opens and closes them), summed as 'postgres'.
    const cpuOfAll = async () => {
      const cpu = new Map<string, number>();
      for (const { label, child } of running.processes) cpu.set(label, cpuMs(child.pid!));
      const backends = await pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [databaseName]);
      for (const { pid } of backends.rows) cpu.set(`postgres:${pid}`, cpuMs(pid));
      const own = process.cpuUsage();
      cpu.set('client', (own.user + own.system) / 1000);
      return cpu;
    };
    const results = new Map<string, Figure>();
    const batch = async (key: string, clients: Client[], operation: Operation | 'recordFill one order', count: number) => {
      if (operation === 'recordFill') {
        await Promise.all(clients.map(async (each) => {
          for (let index = 0; index < count; index += 1) each.toFill.push(await client.submit(each.apiKey));
        }));
      }
      await sleep(SETTLE_MS);
      const before = await cpuOfAll();
      const samples: number[] = [];
      let failed = 0;
      const started = process.hrtime.bigint();
      await Promise.all(
        clients.map(async (each) => {
          const run = client.requestOf(operation, each);
          for (let index = 0; index < count; index += 1) {
            const begun = process.hrtime.bigint();
            try {
              await run();
              samples.push(Number(process.hrtime.bigint() - begun) / 1e6);
            } catch (error) {
              // Counted and shown, not timed: an overloaded machine may time a request out (TEMPORARILY_UNAVAILABLE).
              failed += 1;
              if (failed === 1) console.warn(`  ${key}: ${(error as Error).message}`);
            }
          }
        }),
      );
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The relays' work for this batch happens after its last answer; it is counted once they have emptied.
      await sleep(SETTLE_MS);
      const after = await cpuOfAll();
      const figure: Figure = results.get(key) ?? { samples: [], seconds: 0, cpu: new Map<string, number>(), failed: 0 };
      figure.samples.push(...samples);
      figure.seconds += seconds;
      for (const [key, total] of after) {
        const label = key.startsWith('postgres:') ? 'postgres' : key;
        // A backend that was not there before started during the batch.
        figure.cpu.set(label, (figure.cpu.get(label) ?? 0) + Math.max(0, total - (before.get(key) ?? 0)));
      }
      figure.failed += failed;
      results.set(key, figure);
    };

    // Warm-up: connections, plans and JIT of every path.
    for (const clients of Object.values(scenarios)) {
      await batch('warm-up', clients, 'viewer', 5);
      for (const operation of WRITES) await batch('warm-up', clients, operation, 5);
    }
    await batch('warm-up', scenarios['one account'], 'recordFill one order', 5);

    for (let round = 0; round < ROUNDS; round += 1) {
      // Alternate which scenario goes first, so that neither always runs on a warmer (or fuller) machine.
      const order: Scenario[] = round % 2 === 0 ? ['one account', '8 accounts'] : ['8 accounts', 'one account'];
      for (const operation of WRITES) {
        for (const scenario of order) {
          await batch('viewer', scenarios['one account'], 'viewer', PER_CLIENT);
          await batch(`${operation}, ${scenario}`, scenarios[scenario], operation, PER_CLIENT);
        }
      }
      await batch('viewer', scenarios['one account'], 'viewer', PER_CLIENT);
      await batch('recordFill, 8 clients filling one order', scenarios['one account'], 'recordFill one order', PER_CLIENT);
    }

    const viewerP50 = percentile(results.get('viewer')!.samples, 50);
    console.log(`\n${layout.name}: ${CLIENTS} concurrent clients, ${ROUNDS} interleaved rounds of ${PER_CLIENT} requests per client, viewer before each batch of writes`);
    console.log('  (target: each write p50 ≤ 2× viewer p50; one account within 10% of 8 accounts)');
    const labels = [...results.keys()].filter((key) => key !== 'warm-up');
    for (const label of labels) {
      const figure = results.get(label)!;
      const p50 = percentile(figure.samples, 50);
      const operation = label.split(',')[0]!;
      const eight = label.endsWith('one account') ? results.get(`${operation}, 8 accounts`) : undefined;
      const ratio = label === 'viewer' ? '' : `   ${(p50 / viewerP50).toFixed(2)}× viewer`;
      const gap = eight ? `   one/8 accounts ${(p50 / percentile(eight.samples, 50)).toFixed(2)}` : '';
      const failures = figure.failed > 0 ? `   ${figure.failed} failed` : '';
      console.log(
        `  ${label.padEnd(42)} p50 ${p50.toFixed(2).padStart(7)} ms   p99 ${percentile(figure.samples, 99).toFixed(2).padStart(7)} ms   ${(figure.samples.length / figure.seconds).toFixed(0).padStart(5)}/s${ratio}${gap}${failures}`,
      );
    }
    console.log('  CPU per request, ms (the client is this process; postgres is the backends of the bench database):');
    for (const label of labels) {
      const figure = results.get(label)!;
      const parts = [...figure.cpu].map(([process, ms]) => `${process} ${(ms / figure.samples.length).toFixed(2)}`);
      console.log(`  ${label.padEnd(42)} ${parts.join('   ')}`);
    }
  } finally {
    await client.close();
    await running.stop();
  }
}

// The supergraph every layout's gateway serves, composed as `npm start` composes it.
composeAndWrite();
const base = loadConfig({ ...process.env, LOG_LEVEL: 'warn' });
const logger = createLogger('bench-writes', 'warn');
const database = await createBenchDatabase(base, logger, 'writes');
const databaseName = new URL(database.config.databaseUrl!).pathname.slice(1);
const keys = openKeyStore(database.config, logger, { listen: false });
const operator = operatorScope(keys, database.config, logger);
const apiKeys = await Promise.all(
  Array.from({ length: CLIENTS }, async (_, index) => {
    const account = await createAccount(operator, { name: `Bench account ${index + 1}` });
    return (await createKey(operator, { accountId: account.id, name: 'bench' })).apiKey;
  }),
);
await keys.close();
const pool = new pg.Pool({ connectionString: database.config.databaseUrl, max: 1 });
console.log(`\nbench (writes, measured as a client): Postgres ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded'}, Redis ${database.config.redisUrl ? 'from REDIS_URL' : 'unset'}`);
try {
  const only = process.env.BENCH_LAYOUT;
  for (const layout of LAYOUTS) if (!only || layout.name.startsWith(only)) await benchLayout(layout, database.config, apiKeys, pool, databaseName);
} finally {
  await pool.end();
  await database.drop();
}
console.log('');
