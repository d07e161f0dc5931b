import { hashApiKey, isWellFormedApiKey, readKeyCacheGeneration } from '@ots/accounts';
import { openBenchStack } from './bench-stack.ts';
import { percentile } from './percentile.ts';
import { runPerRequestCosts } from './write-latency.ts';

/**
 * `npm run bench`, after scripts/bench-writes.ts (the writes as a client measures them): figures, not
 * pass/fail. Runs the whole stack in this process on a throwaway database (on DATABASE_URL's server,
 * else the embedded Postgres): key look-ups, what each request costs in round trips, paging and
 * throughput, ratios measured in the same run, since absolute numbers on a shared 2-core machine are noisy.
 */
const { config, stack, apiKey, close } = await openBenchStack('bench');

async function timeEach(count: number, run: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return samples.sort((a, b) => a - b);
}

const report = (label: string, sorted: number[]) =>
  console.log(`${label.padEnd(52)} p50 ${percentile(sorted, 50).toFixed(3)} ms   p99 ${percentile(sorted, 99).toFixed(3)} ms`);

const send = (key: string, query: string, variables?: Record<string, unknown>) =>
  fetch(stack.gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ query, variables }),
  }).then(async (response) => {
    const body = (await response.json()) as { errors?: unknown };
    if (response.status !== 200 || body.errors) throw new Error(`bench request failed: ${JSON.stringify(body)}`);
    return body;
  });
const graphql = (query: string, variables?: Record<string, unknown>) => send(apiKey, query, variables);

console.log(`\nbench: Postgres ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded'}, Redis ${config.redisUrl ? 'from REDIS_URL' : 'unset (in-process cache only)'}\n`);

// Key checks: the checksum refuses a made-up key before any I/O; a look-up's cost depends on the layer that answers.
const keyHash = hashApiKey(config.apiKeyHmacSecret, apiKey);
const checksum = await timeEach(20_000, async () => isWellFormedApiKey(apiKey));
const localHit = await timeEach(20_000, () => stack.keys.keyStore.lookup(keyHash));
const generation = await readKeyCacheGeneration(stack.keys.db);
const fromPostgres = await timeEach(300, async () => {
  await stack.keys.keyStore.invalidate([keyHash], generation);
  return stack.keys.keyStore.lookup(keyHash);
});
report('key checksum (no I/O)', checksum);
report('key look-up, in-process hit', localHit);
report('key look-up, miss to Redis/Postgres', fromPostgres);
console.log(`  ratio: a miss costs ${(percentile(fromPostgres, 50) / percentile(localHit, 50)).toFixed(0)}× an in-process hit\n`);

// Whole requests through the gateway.
const viewerQuery = '{ viewer { account { id name } apiKey { id displayPrefix } } }';
await timeEach(200, () => graphql(viewerQuery));
const viewer = await timeEach(1_000, () => graphql(viewerQuery));
report('gateway → accounts: viewer', viewer);

const unauthenticated = await timeEach(1_000, () =>
  fetch(stack.gateway.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: viewerQuery }) }).then((r) => r.text()),
);
report('gateway Variant A (no key)', unauthenticated);

// What each request costs in round trips (the writes' latencies under load: scripts/bench-writes.ts).
const serviceOfPort = new Map<string, string>([...stack.subgraphs].map(([name, server]) => [String(server.port), name]));
serviceOfPort.set(String(new URL(stack.gateway.url).port), 'gateway');
await runPerRequestCosts({ send, apiKey, serviceOfPort });

// Orders: keyset paging, whose page N should cost what page 1 costs (page 40 needs 2,000 orders).
let toSeed = 2_050;
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (toSeed > 0) {
      toSeed -= 1;
      await graphql('mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } } }', {
        input: { symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: '10', limitPrice: '187.25' },
      });
    }
  }),
);
const pageQuery = 'query ($after: String) { listOrderSubmissions(first: 50, after: $after) { nodes { id status quantity } pageInfo { endCursor } } }';
let cursor: string | undefined;
for (let page = 0; page < 39; page += 1) {
  const body = (await graphql(pageQuery, { after: cursor })) as { data: { listOrderSubmissions: { pageInfo: { endCursor: string } } } };
  cursor = body.data.listOrderSubmissions.pageInfo.endCursor;
}
const firstPage = await timeEach(300, () => graphql(pageQuery));
const fortiethPage = await timeEach(300, () => graphql(pageQuery, { after: cursor }));
report('listOrderSubmissions(first: 50), page 1', firstPage);
report('listOrderSubmissions(first: 50), page 40', fortiethPage);
console.log(`  ratio: page 40 costs ${(percentile(fortiethPage, 50) / percentile(firstPage, 50)).toFixed(2)}× page 1\n`);

const concurrency = 16;
const perWorker = 250;
const rssBefore = process.memoryUsage().rss;
const started = process.hrtime.bigint();
await Promise.all(Array.from({ length: concurrency }, async () => timeEach(perWorker, () => graphql(viewerQuery))));
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
console.log(`gateway throughput, ${concurrency} concurrent clients: ${((concurrency * perWorker) / seconds).toFixed(0)} requests/s`);
console.log(`process RSS: ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB after the load\n`);

await close();
process.exit(0);
