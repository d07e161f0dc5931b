import { Receiver } from '../testing/webhook-receiver.ts';
import { openBenchStack } from './bench-stack.ts';

/**
 * The events part of `npm run bench` (after scripts/bench.ts): how long from a committed change to
 * its webhook arriving, verified, at a receiver on this machine, and how fast the feed pages. The
 * changes are order submissions. A relay is woken after each request its service answers and the
 * dispatcher by each ingest; their polling intervals (OUTBOX_RELAY_INTERVAL_MS,
 * WEBHOOK_DISPATCH_INTERVAL_MS) only bound what a wake-up misses.
 */
const { config, stack, apiKey, close } = await openBenchStack('bench-events');
const receiver = await new Receiver().start();

async function graphql<T>(query: string, variables?: Record<string, unknown>): Promise<T> {
  const response = await fetch(stack.gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data: T; errors?: unknown };
  if (response.status !== 200 || body.errors) throw new Error(`bench request failed: ${JSON.stringify(body)}`);
  return body.data;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

console.log(
  `\nbench events: relay polls every ${config.outboxRelayIntervalMs} ms, dispatcher every ${config.webhookDispatchIntervalMs} ms (woken by each ingest that queues a delivery)\n`,
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
