import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { scrape } from '@ots/shared/testing/metrics';
import { freePort } from '@ots/shared/testing/ports';
import { startNodeProcess, type StartedProcess } from '@ots/shared/testing/processes';

/** `npm start`'s program as a user runs it: its own process, configured only through the environment. */

let database: TestDatabase;
let service: StartedProcess;
let gatewayUrl: string;
let demoKey: string;
let metricsUrl: string;

/** The process's log lines (JSON, since its stdout is not a terminal). */
const logLines = (): Record<string, unknown>[] =>
  service.output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

beforeAll(async () => {
  database = await createTestDatabase();
  const [gateway, accounts, orders, strategies, fills, metrics] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  metricsUrl = `http://127.0.0.1:${metrics}/metrics`;
  // Without vitest's NODE_ENV=test, as a user runs it: libraries that install their own signal handlers outside tests do so here too.
  const { NODE_ENV: _testMode, ...environment } = process.env;
  service = startNodeProcess(['--import', 'tsx', 'scripts/start.ts'], {
    ...environment,
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    REDIS_KEY_PREFIX: `test:${randomBytes(4).toString('hex')}:`,
    GATEWAY_PORT: String(gateway),
    ACCOUNTS_PORT: String(accounts),
    ORDERS_PORT: String(orders),
    STRATEGIES_PORT: String(strategies),
    FILLS_PORT: String(fills),
    METRICS_PORT: String(metrics),
    LOG_LEVEL: 'info',
  });
  await service.started(/Demo API key: (svc_live_\w+)/, 'the service', 45_000);
  demoKey = /Demo API key: (svc_live_\w+)/.exec(service.output)![1]!;
  gatewayUrl = /running at (http:\/\/\S+)/.exec(service.output)![1]!;
}, 60_000);

afterAll(async () => {
  if (service.child.exitCode === null) service.child.kill('SIGKILL');
  await database.drop();
});

const viewer = () =>
  fetch(gatewayUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': demoKey },
    body: JSON.stringify({ query: '{ viewer { account { name } } }' }),
  });

describe('the service started as npm start starts it', () => {
  it('creates a demo account on the first run, prints its key with a curl line, and serves it', async () => {
    expect(gatewayUrl).toMatch(/\/graphql$/);
    expect(service.output).toContain(`curl -s ${gatewayUrl}`);
    const response = await viewer();
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { viewer: { account: { name: 'Demo account' } } } });
  });

  it('invites a demo owner on the first run and prints the console address and a set-password link that signs in', async () => {
    const started = Date.now();
    while (!/set-password#token=/.test(service.output) && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 100));
    const origin = new URL(gatewayUrl).origin;
    expect(service.output).toContain(`Console: ${origin}/`);
    const link = new RegExp(`(${origin}/set-password#token=([A-Za-z0-9_-]+))`).exec(service.output);
    expect(link).not.toBeNull();
    const response = await fetch(`${origin}/console/api/set-password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ token: link![2], password: 'a demo password' }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ owner: { email: 'demo@example.com' }, account: { name: 'Demo account' } });
  });

  it('writes one JSON line per request at info: request id, operation, status, duration, account and key id, never the key or the variables', async () => {
    const response = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': demoKey },
      body: JSON.stringify({ query: 'query Whoami($id: ID!) { viewer { account { id } } orderSubmission(id: $id) { id } }', variables: { id: 'secret-in-a-variable' } }),
    });
    const body = (await response.json()) as { data: { viewer: { account: { id: string } } } };
    const requestId = response.headers.get('x-request-id');
    await expect.poll(() => logLines().filter((line) => line.reqId === requestId && line.msg === 'request completed').length).toBe(1);
    const line = logLines().find((entry) => entry.reqId === requestId && entry.msg === 'request completed')!;
    expect(line).toMatchObject({ level: 30, operation: 'Whoami', status: 200, outcome: 'ok', accountId: body.data.viewer.account.id, apiKeyId: expect.any(String) });
    expect(line.durationMs).toEqual(expect.any(Number));
    const logged = service.output.split('\n').filter((entry) => entry.startsWith('{')).join('\n');
    expect(logged).not.toContain(demoKey);
    expect(logged).not.toContain('secret-in-a-variable');
  });

  it('serves the metrics of every server of the process on METRICS_PORT', async () => {
    await viewer();
    const scraped = await scrape(metricsUrl);
    expect(scraped.value('ots_requests_total', { service: 'gateway', outcome: 'ok' })).toBeGreaterThan(0);
    expect(scraped.value('ots_requests_total', { service: 'accounts', outcome: 'ok' })).toBeGreaterThan(0);
  });

  it('on SIGTERM, requests in flight complete, later ones are refused cleanly, and the process exits 0', async () => {
    const outcomes = Array.from({ length: 40 }, async (_, i) => {
      await new Promise((resolve) => setTimeout(resolve, i * 5));
      try {
        const response = await viewer();
        return response.status === 200 ? 'answered' : `status ${response.status}`;
      } catch {
        // The connection was refused: the server had stopped accepting before this request.
        return 'refused';
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
    const stopAt = Date.now();
    service.child.kill('SIGTERM');
    const results = await Promise.all(outcomes);
    expect(await exited).toBe(0);
    // Clients' idle keep-alive connections do not hold the stop up until their timeout.
    expect(Date.now() - stopAt).toBeLessThan(5_000);
    expect(results.filter((result) => result !== 'answered' && result !== 'refused' && result !== 'status 503')).toEqual([]);
    expect(results).toContain('answered');
    // The last line says so.
    expect(logLines().at(-1)?.msg).toMatch(/^stopped/);
  });
});
