import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrape } from '@ots/shared/testing/metrics';
import { freePort } from '@ots/shared/testing/ports';
import { startNodeProcess, type StartedProcess } from '@ots/shared/testing/processes';
import { startStack, type TestStack } from '../../testing/stack.ts';

/**
 * The gateway as the production image runs it: its entry point `dist/gateway/main.js` on the
 * compiled JavaScript under plain `node` (no tsx), packages resolved to their JavaScript by the
 * "compiled" condition, the tracing preload loaded first.
 * The subgraphs it calls run in this process.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let stack: TestStack;
let gateway: StartedProcess;
let gatewayUrl: string;
let metricsUrl: string;

beforeAll(async () => {
  const compiled = spawnSync('npm', ['run', 'compile'], { cwd: ROOT, encoding: 'utf8' });
  expect(compiled.status, compiled.stderr).toBe(0);
  stack = await startStack();
  const [port, metricsPort] = [await freePort(), await freePort()];
  gatewayUrl = `http://127.0.0.1:${port}/graphql`;
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const { NODE_ENV: _testMode, ...environment } = process.env;
  gateway = startNodeProcess(['--conditions=compiled', 'dist/gateway/main.js'], {
    ...environment,
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.config.redisUrl ?? '',
    REDIS_KEY_PREFIX: stack.config.redisKeyPrefix,
    ACCOUNTS_URL: stack.urls.accounts,
    ORDERS_URL: stack.urls.orders,
    STRATEGIES_URL: stack.urls.strategies,
    FILLS_URL: stack.urls.fills,
    GATEWAY_PORT: String(port),
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: 'info',
  });
  await gateway.started(/gateway listening/, 'the compiled gateway', 30_000);
}, 60_000);

afterAll(async () => {
  if (gateway && gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
  await stack?.close();
});

describe('the compiled gateway under plain node', () => {
  it('answers a request through the subgraphs and serves its metrics on METRICS_PORT', async () => {
    const client = await stack.createAccountWithKey('Compiled');
    const response = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': client.apiKey },
      body: JSON.stringify({ query: 'query Compiled { viewer { account { id } } }' }),
    });
    expect(await response.json()).toEqual({ data: { viewer: { account: { id: client.accountId } } } });
    expect((await scrape(metricsUrl)).value('ots_requests_total', { service: 'gateway', operation: 'Compiled', outcome: 'ok' })).toBe(1);
  });

  it('stops on SIGTERM with exit code 0, its last line saying so', async () => {
    const exited = new Promise<number | null>((resolve) => gateway.child.once('exit', (code) => resolve(code)));
    gateway.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lines = gateway.output.split('\n').filter((line) => line.startsWith('{'));
    expect(JSON.parse(lines.at(-1)!).msg).toMatch(/^stopped/);
  });
});
