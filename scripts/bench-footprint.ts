import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { runService } from '@ots/shared/service';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { Scrape } from '@ots/shared/testing/metrics';
import { freePort } from '@ots/shared/testing/ports';
import { createAccount, createKey, openKeyStore, operatorScope } from '@ots/accounts';
import { createBenchDatabase } from './bench-database.ts';
import { allServices } from './services.ts';

/**
 * `npm run bench` (after bench.ts): the gateway's footprint, as its own process, run the two ways
 * it can be: TypeScript through tsx (`npm start`, development) and the compiled JavaScript (the
 * production image). Prints the time from spawning it to its first ready answer, and its resident
 * memory idle and after a load of requests. The subgraphs run in this process, on a throwaway database.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STARTS = 3;
const LOAD_REQUESTS = 2_000;
const CONCURRENCY = 8;

const logger = createLogger('bench', 'warn');
const database = await createBenchDatabase(loadConfig({ ...process.env, LOG_LEVEL: 'warn' }), logger, 'footprint');
const { config } = database;
const databaseUrl = config.databaseUrl!;

const subgraphs: RunningServer[] = [];
for (const service of allServices) subgraphs.push(await runService(service, { config, port: 0, logger }));
const keys = openKeyStore(config, logger, { listen: false });
const operator = operatorScope(keys, config, logger);
const account = await createAccount(operator, { name: 'Footprint account' });
const { apiKey } = await createKey(operator, { accountId: account.id, name: 'footprint' });

console.log('\nbench-footprint: compiling (npm run compile)…');
const compiled = spawnSync('npm', ['run', 'compile'], { cwd: ROOT, stdio: 'inherit' });
if (compiled.status !== 0) throw new Error('npm run compile failed');

interface Build {
  label: string;
  args: string[];
}
// Each as it is run: with the tracing preload, which does nothing while OTEL_EXPORTER_OTLP_ENDPOINT is unset.
const builds: Build[] = [
  { label: 'tsx (npm start)', args: ['--import', 'tsx', '--import', './shared/src/tracing-preload.ts', 'gateway/src/main.ts'] },
  { label: 'compiled (image)', args: ['--conditions=compiled', '--import', './shared/src/tracing-preload.js', 'gateway/src/main.js'] },
];

interface Gateway {
  child: ChildProcess;
  url: string;
  metricsUrl: string;
  startupMs: number;
}

/** The figures are of the gateway without tracing: an OTLP endpoint in the environment would add the SDK's. */
function withoutTracing(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { OTEL_EXPORTER_OTLP_ENDPOINT: _endpoint, ...rest } = env;
  return rest;
}

async function startGateway(build: Build): Promise<Gateway> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const urls = Object.fromEntries(subgraphs.map((server) => [`${server.name.toUpperCase()}_URL`, server.url]));
  const started = performance.now();
  const child = spawn(process.execPath, build.args, {
    cwd: ROOT,
    env: {
      ...withoutTracing(process.env),
      ...urls,
      DATABASE_URL: databaseUrl,
      REDIS_KEY_PREFIX: config.redisKeyPrefix,
      GATEWAY_PORT: String(port),
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '1000000',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const origin = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${build.label}: the gateway exited with ${child.exitCode}`);
    const ready = await fetch(`${origin}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { child, url: `${origin}/graphql`, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, startupMs: performance.now() - started };
}

async function stop(gateway: Gateway): Promise<void> {
  const exited = new Promise((resolve) => gateway.child.once('exit', resolve));
  gateway.child.kill('SIGTERM');
  await exited;
}

/** Resident memory as the process reports it on its own metrics port. */
async function rssMiB(gateway: Gateway): Promise<number> {
  const text = await (await fetch(gateway.metricsUrl)).text();
  return new Scrape(text).value('process_resident_memory_bytes') / 2 ** 20;
}

async function load(gateway: Gateway): Promise<void> {
  const body = JSON.stringify({ query: '{ viewer { account { id name } apiKey { displayPrefix } } }' });
  let sent = 0;
  const client = async () => {
    while (sent < LOAD_REQUESTS) {
      sent += 1;
      const response = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body });
      if (response.status !== 200) throw new Error(`load request answered ${response.status}: ${await response.text()}`);
      await response.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows: { label: string; startupMs: number; idleMiB: number; loadedMiB: number }[] = [];
for (const build of builds) {
  const startups: number[] = [];
  for (let i = 1; i < STARTS; i += 1) {
    const gateway = await startGateway(build);
    startups.push(gateway.startupMs);
    await stop(gateway);
  }
  const gateway = await startGateway(build);
  startups.push(gateway.startupMs);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const idleMiB = await rssMiB(gateway);
  await load(gateway);
  const loadedMiB = await rssMiB(gateway);
  await stop(gateway);
  rows.push({ label: build.label, startupMs: median(startups), idleMiB, loadedMiB });
}

console.log(`\ngateway process footprint (start-up: median of ${STARTS} starts, spawn to first ready /readyz; RSS idle 2 s after start, then after ${LOAD_REQUESTS.toLocaleString('en')} viewer requests from ${CONCURRENCY} clients)`);
console.log(`${'build'.padEnd(20)}${'start-up'.padStart(12)}${'RSS idle'.padStart(12)}${'RSS loaded'.padStart(12)}`);
for (const row of rows) {
  console.log(`${row.label.padEnd(20)}${`${row.startupMs.toFixed(0)} ms`.padStart(12)}${`${row.idleMiB.toFixed(0)} MiB`.padStart(12)}${`${row.loadedMiB.toFixed(0)} MiB`.padStart(12)}`);
}
const [tsx, js] = rows as [(typeof rows)[0], (typeof rows)[0]];
console.log(`  ratio compiled/tsx: start-up ${(js.startupMs / tsx.startupMs).toFixed(2)}, RSS idle ${(js.idleMiB / tsx.idleMiB).toFixed(2)}, RSS loaded ${(js.loadedMiB / tsx.loadedMiB).toFixed(2)}\n`);

await keys.close();
for (const server of subgraphs.reverse()) await server.close();
await database.drop();
