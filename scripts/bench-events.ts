import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createClient } from 'graphql-sse';
import { createAccount, createKey, openKeyStore, operatorScope, type OperatorScope } from '@ots/accounts';
import { composeAndWrite } from '@ots/gateway/compose';
import { loadConfig, type Config } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { EVENTS_SUBSCRIPTION, streamUrls, type StreamedEvent } from '../testing/streams.ts';
import { Receiver } from '../testing/webhook-receiver.ts';
import { createBenchDatabase } from './bench-database.ts';
import { startServerProcess } from './bench-process.ts';
import { openBenchStack } from './bench-stack.ts';
import { percentile } from './percentile.ts';

/**
 * The events part of `npm run bench` (after scripts/bench.ts): how long from a committed change to
 * its webhook arriving, verified, at a receiver on this machine, and how fast the feed pages. The
 * changes are order submissions. A relay is woken after each request its service answers and the
 * dispatcher by each ingest; their polling intervals (OUTBOX_RELAY_INTERVAL_MS,
 * WEBHOOK_DISPATCH_INTERVAL_MS) only bound what a wake-up misses.
 *
 * The server runs in a process of its own (`npm start`'s layout), as the contract measures speed:
 * the writers, the streams' clients and the webhook receiver are this process, as clients are. With
 * BENCH_EVENTS_LAYOUT=in-process, the whole stack runs in this process instead, sharing one event
 * loop with its load (how this bench ran before: every figure is slower so).
 */
interface BenchServer {
  config: Config;
  gatewayUrl: string;
  apiKey: string;
  operator: OperatorScope;
  /** The server's memory now: heap (only when it runs in this process) and resident set. */
  memory(): { heap: number | undefined; rss: number };
  close(): Promise<void>;
}

async function openServer(): Promise<BenchServer> {
  if (process.env.BENCH_EVENTS_LAYOUT === 'in-process') {
    const bench = await openBenchStack('bench-events');
    return {
      config: bench.config,
      gatewayUrl: bench.stack.gateway.url,
      apiKey: bench.apiKey,
      operator: bench.operator,
      memory: () => {
        (globalThis as { gc?: () => void }).gc?.();
        const usage = process.memoryUsage();
        return { heap: usage.heapUsed, rss: usage.rss };
      },
      close: bench.close,
    };
  }
  composeAndWrite();
  const logger = createLogger('bench-events', 'warn');
  const database = await createBenchDatabase(loadConfig({ ...process.env, LOG_LEVEL: 'warn' }), logger, 'events');
  const keys = openKeyStore(database.config, logger, { listen: false });
  const operator = operatorScope(keys, database.config, logger);
  const account = await createAccount(operator, { name: 'Bench account (events)' });
  const { apiKey } = await createKey(operator, { accountId: account.id, name: 'bench-events' });
  const server = await startServerProcess(database.config);
  return {
    config: database.config,
    gatewayUrl: server.gatewayUrl,
    apiKey,
    operator,
    // statm's second field: resident pages.
    memory: () => ({ heap: undefined, rss: Number(readFileSync(`/proc/${server.child.pid}/statm`, 'utf8').split(' ')[1]) * 4096 }),
    close: async () => {
      await server.stop();
      await keys.close();
      await database.drop();
    },
  };
}

const { config, gatewayUrl, apiKey, operator, memory, close } = await openServer();
const receiver = await new Receiver().start();

async function graphql<T>(query: string, variables?: Record<string, unknown>): Promise<T> {
  const response = await fetch(gatewayUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data: T; errors?: unknown };
  if (response.status !== 200 || body.errors) throw new Error(`bench request failed: ${JSON.stringify(body)}`);
  return body.data;
}

/** The bench account's id, read back through its key. */
async function keyAccount(): Promise<string> {
  const { viewer } = await graphql<{ viewer: { account: { id: string } } }>('{ viewer { account { id } } }');
  return viewer.account.id;
}

console.log(
  `\nbench events (server ${process.env.BENCH_EVENTS_LAYOUT === 'in-process' ? 'in this process' : 'in a process of its own'}): relay polls every ${config.outboxRelayIntervalMs} ms, dispatcher every ${config.webhookDispatchIntervalMs} ms (woken by each ingest that queues a delivery)\n`,
);

const created = await graphql<{ createWebhookEndpoint: { signingSecret: string } }>(
  'mutation ($url: String!) { createWebhookEndpoint(input: { url: $url }) { signingSecret } }',
  { url: receiver.url },
);
receiver.secrets = [created.createWebhookEndpoint.signingSecret];

// Delay: from the response of a committed submitOrder to its webhook at the receiver, one order at a time.
const SUBMIT = 'mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } } }';
const submitOrder = (clientOrderId: string) => graphql(SUBMIT, { input: { clientOrderId, symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '1' } });
const changes = 300;
const committedAt = new Map<string, number>();
for (let index = 0; index < changes; index += 1) {
  const clientOrderId = `latency-${index}`;
  await submitOrder(clientOrderId);
  committedAt.set(clientOrderId, performance.now());
  await receiver.waitFor(index + 1, 30_000);
}
const delays = receiver.received
  .map((hook) => {
    if (hook.verified === undefined) throw new Error('a webhook failed verification');
    const { data } = JSON.parse(hook.body) as { data: { clientOrderId: string } };
    return hook.receivedAt - committedAt.get(data.clientOrderId)!;
  })
  .sort((a, b) => a - b);
console.log(
  `${'committed submitOrder → verified webhook'.padEnd(52)} p50 ${percentile(delays, 50).toFixed(1)} ms   p99 ${percentile(delays, 99).toFixed(1)} ms   (${changes} changes)`,
);

// Push: 8 clients writing while 8 streams are open (and the webhook endpoint above receives them too).
// From each write's response to its event on every stream, and to its webhook's first attempt.
const streamUrl = streamUrls(gatewayUrl).sse;
const arrivals = new Map<string, number[]>();
const streams = Array.from({ length: 8 }, () => createClient({ url: streamUrl, headers: { 'x-api-key': apiKey }, retryAttempts: 0 }));
const reading = streams.map(async (client) => {
  for await (const result of client.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION })) {
    const { event } = result.data!.events;
    const clientOrderId = (event.data as { clientOrderId?: string }).clientOrderId;
    if (event.type !== 'order_submission.submitted' || !clientOrderId?.startsWith('push-')) continue;
    const list = arrivals.get(clientOrderId) ?? [];
    list.push(performance.now());
    arrivals.set(clientOrderId, list);
  }
});
await new Promise((resolve) => setTimeout(resolve, 500));
const answeredAt = new Map<string, number>();
const webhooksBefore = receiver.received.length;
const pushWrites = 400;
let nextPush = 0;
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (nextPush < pushWrites) {
      const clientOrderId = `push-${nextPush++}`;
      await submitOrder(clientOrderId);
      answeredAt.set(clientOrderId, performance.now());
    }
  }),
);
const pushDeadline = Date.now() + 30_000;
while ((arrivals.size < pushWrites || [...arrivals.values()].some((list) => list.length < 8)) && Date.now() < pushDeadline) {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
await receiver.waitFor(webhooksBefore + pushWrites, 30_000);
for (const client of streams) client.dispose();
await Promise.allSettled(reading);
const toStream = [...arrivals].flatMap(([clientOrderId, list]) => list.map((at) => Math.max(0, at - answeredAt.get(clientOrderId)!))).sort((a, b) => a - b);
const toWebhook = receiver.received
  .slice(webhooksBefore)
  .map((hook) => {
    const { data } = JSON.parse(hook.body) as { data: { clientOrderId: string } };
    return Math.max(0, hook.receivedAt - answeredAt.get(data.clientOrderId)!);
  })
  .sort((a, b) => a - b);
console.log(
  `${'write response → event on a stream (8 writers, 8 streams)'.padEnd(52)} p50 ${percentile(toStream, 50).toFixed(1)} ms   p99 ${percentile(toStream, 99).toFixed(1)} ms   (${toStream.length} arrivals)`,
);
console.log(
  `${'write response → first webhook attempt (same run)'.padEnd(52)} p50 ${percentile(toWebhook, 50).toFixed(1)} ms   p99 ${percentile(toWebhook, 99).toFixed(1)} ms   (${toWebhook.length} webhooks)`,
);

// Idle streams: how many one gateway process holds, and what each costs: the server's resident set
// (a process of its own), or the heap with the clients' sockets in it too (in-process: an upper bound).
const idleTarget = Number(process.env.BENCH_IDLE_STREAMS ?? 2_000);
const accountId = await keyAccount();
const idleKeys = await Promise.all(
  Array.from({ length: Math.ceil(idleTarget / 10) }, async (_, index) => (await createKey(operator, { accountId, name: `idle ${index}` })).apiKey),
);
const memoryBefore = memory();
const idle: http.ClientRequest[] = [];
let opened = 0;
for (let index = 0; index < idleTarget; index += 1) {
  const request = http.request(streamUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': idleKeys[Math.floor(index / 10)]! } });
  request.end(JSON.stringify({ query: EVENTS_SUBSCRIPTION }));
  const status = await new Promise<number>((resolve) => {
    request.once('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.once('error', () => resolve(0));
  });
  idle.push(request);
  if (status !== 200) break;
  opened += 1;
}
await new Promise((resolve) => setTimeout(resolve, 2_000));
const memoryAfter = memory();
const heapEach =
  memoryAfter.heap === undefined || memoryBefore.heap === undefined
    ? `~${((memoryAfter.rss - memoryBefore.rss) / opened / 1024).toFixed(1)} KiB of the server's RSS each`
    : `~${((memoryAfter.heap - memoryBefore.heap) / opened / 1024).toFixed(1)} KiB of heap each, clients' sockets included (RSS ${((memoryAfter.rss - memoryBefore.rss) / 1024 / 1024).toFixed(0)} MiB more in all)`;
console.log(`${'idle streams held by one gateway process'.padEnd(52)} ${opened} of ${idleTarget} tried   ${heapEach}`);
for (const request of idle) request.destroy();

// Feed: seed events with 8 concurrent writers, wait until the feed holds them all, then page through it.
const seed = 3_000;
let toSeed = seed;
const seedStarted = performance.now();
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (toSeed > 0) {
      toSeed -= 1;
      await submitOrder(`feed-${toSeed}`);
    }
  }),
);
const pageQuery = 'query ($after: String) { listEvents(first: 200, after: $after) { nodes { id type occurredAt data } pageInfo { endCursor hasNextPage } } }';
interface Page {
  listEvents: { nodes: unknown[]; pageInfo: { endCursor: string | null; hasNextPage: boolean } };
}
const total = changes + seed;
async function readFeed(): Promise<number> {
  let after: string | null = null;
  let read = 0;
  for (;;) {
    const page: Page = await graphql<Page>(pageQuery, { after });
    read += page.listEvents.nodes.length;
    after = page.listEvents.pageInfo.endCursor ?? after;
    if (!page.listEvents.pageInfo.hasNextPage) return read;
  }
}
while ((await readFeed()) < total) await new Promise((resolve) => setTimeout(resolve, 100));
const landed = (performance.now() - seedStarted) / 1000;
console.log(`${'8 writers submitting orders, until all in the feed'.padEnd(52)} ${(seed / landed).toFixed(0)} events/s (${seed} events)`);

const readStarted = performance.now();
const rounds = 3;
for (let round = 0; round < rounds; round += 1) await readFeed();
const readSeconds = (performance.now() - readStarted) / 1000;
console.log(`${'feed read: listEvents(first: 200), whole feed'.padEnd(52)} ${((rounds * total) / readSeconds).toFixed(0)} events/s (${total} events, ${rounds} passes)\n`);

await receiver.close();
await close();
process.exit(0);
