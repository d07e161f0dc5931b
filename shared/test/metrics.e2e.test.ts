import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@ots/shared/logger';
import { MAX_OPERATION_NAMES, operationLabel, startMetricsServer, type MetricsServer } from '@ots/shared/metrics';
import { Scrape, scrape } from '@ots/shared/testing/metrics';
import { data, type Client } from '../../testing/requests.ts';
import { startStack, type TestStack } from '../../testing/stack.ts';

/**
 * The metrics an operator alerts on, read the way Prometheus reads them: real requests through the
 * gateway, then a scrape of the metrics port of this process, where every server of the stack runs.
 */
let stack: TestStack;
let metrics: MetricsServer;
let metricsUrl: string;

beforeAll(async () => {
  stack = await startStack({
    env: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '5', FAILED_AUTH_PER_SECOND: '1', FAILED_AUTH_BURST: '3' },
  });
  metrics = await startMetricsServer({ host: '127.0.0.1', port: 0, logger: createLogger('test', 'silent') });
  metricsUrl = `http://127.0.0.1:${metrics.port}/metrics`;
});

afterAll(async () => {
  await metrics?.close();
  await stack?.close();
});

/** What changed in `name{labels}` across `act`. */
async function change(act: () => Promise<unknown>, name: string, labels: Record<string, string>): Promise<number> {
  const before = (await scrape(metricsUrl)).value(name, labels);
  await act();
  return (await scrape(metricsUrl)).value(name, labels) - before;
}

const viewerAs = (client: Client, operation = 'Me') => data(stack, client, `query ${operation} { viewer { account { id } } }`);

describe('metrics', () => {
  it('are served on their own port, never on the public gateway port', async () => {
    const onGateway = await fetch(new URL('/metrics', stack.gatewayUrl));
    expect(onGateway.status).toBe(404);
    const response = await fetch(metricsUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    // Process metrics come with them.
    expect(new Scrape(await response.text()).has('process_resident_memory_bytes')).toBe(true);
  });

  it('count requests and their latency by operation name and outcome, at the gateway and at the subgraph that served them', async () => {
    const client = await stack.createAccountWithKey();
    const before = await scrape(metricsUrl);
    await viewerAs(client, 'WhoAmI');
    await viewerAs(client, 'WhoAmI');
    const after = await scrape(metricsUrl);
    const delta = (name: string, labels: Record<string, string>) => after.value(name, labels) - before.value(name, labels);

    expect(delta('ots_requests_total', { service: 'gateway', operation: 'WhoAmI', outcome: 'ok' })).toBe(2);
    expect(delta('ots_request_duration_seconds_count', { service: 'gateway', operation: 'WhoAmI', outcome: 'ok' })).toBe(2);
    expect(delta('ots_request_duration_seconds_sum', { service: 'gateway', operation: 'WhoAmI', outcome: 'ok' })).toBeGreaterThan(0);
    // The gateway names its fetch after the client's operation; the subgraph counts it under that name.
    expect(delta('ots_requests_total', { service: 'accounts', operation: 'WhoAmI__accounts__0', outcome: 'ok' })).toBe(2);
    expect(delta('ots_subgraph_fetch_duration_seconds_count', { caller: 'gateway', subgraph: 'accounts' })).toBe(2);
  });

  it('tell refused requests apart: no key, an invalid key, a GraphQL error', async () => {
    const client = await stack.createAccountWithKey();
    expect(await change(() => stack.graphql(undefined, '{ viewer { account { id } } }'), 'ots_requests_total', { service: 'gateway', outcome: 'no_key', operation: 'none' })).toBe(1);
    expect(await change(() => stack.graphql('svc_live_made-up', '{ viewer { account { id } } }'), 'ots_requests_total', { service: 'gateway', outcome: 'invalid_key' })).toBe(1);
    const missing = () => stack.graphql(client.apiKey, 'query Missing { orderSubmission(id: "nope") { id } }');
    expect(await change(missing, 'ots_requests_total', { service: 'gateway', operation: 'Missing' })).toBe(1);
  });

  it('count key look-ups by the cache layer that answered', async () => {
    const client = await stack.createAccountWithKey();
    const before = await scrape(metricsUrl);
    await viewerAs(client);
    await viewerAs(client);
    const after = await scrape(metricsUrl);
    const delta = (layer: string) => after.value('ots_api_key_lookups_total', { layer }) - before.value('ots_api_key_lookups_total', { layer });
    // A new key is read from Postgres once (its creation left nothing cached), then from the in-process layer.
    expect(delta('postgres') + delta('redis')).toBe(1);
    expect(delta('local')).toBe(1);
  });

  it('time calls between subgraphs: orders asking strategies', async () => {
    const client = await stack.createAccountWithKey();
    const created = await data(stack, client, 'mutation { createStrategy(input: { name: "Momentum" }) { strategy { id } } }');
    const submit = () =>
      data(stack, client, 'mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { error { code } } }', {
        input: { symbol: 'ACME', side: 'BUY', type: 'MARKET', quantity: '1', strategyId: created.createStrategy.strategy.id },
      });
    expect(await change(submit, 'ots_subgraph_fetch_duration_seconds_count', { caller: 'orders', subgraph: 'strategies' })).toBe(1);
  });

  it('count failed subgraph fetches per subgraph, with the reason', async () => {
    const client = await stack.createAccountWithKey();
    await stack.stopService('accounts');
    try {
      const unreachable = () => stack.graphql(client.apiKey, 'query Outage { viewer { account { id } } }');
      expect(await change(unreachable, 'ots_subgraph_fetch_errors_total', { caller: 'gateway', subgraph: 'accounts', reason: 'unreachable' })).toBe(1);
      expect(await change(unreachable, 'ots_requests_total', { service: 'gateway', operation: 'Outage', outcome: 'graphql_error' })).toBe(1);
    } finally {
      await stack.startService('accounts');
    }
  });

  it('show the Postgres pools of every service', async () => {
    // A request that reads the accounts schema: its pool holds a connection afterwards.
    await viewerAs(await stack.createAccountWithKey());
    const scraped: Scrape = await scrape(metricsUrl);
    for (const pool of ['accounts', 'orders', 'strategies', 'fills', 'api-key-store']) {
      expect(scraped.value('ots_db_pool_max_connections', { pool })).toBe(10);
      expect(scraped.has('ots_db_pool_connections', { pool })).toBe(true);
      expect(scraped.value('ots_db_pool_waiting_requests', { pool })).toBe(0);
    }
    expect(scraped.value('ots_db_pool_connections', { pool: 'accounts' })).toBeGreaterThan(0);
  });

  it("show each producer's outbox: the events relayed to the events service and the age of the oldest one waiting", async () => {
    const client = await stack.createAccountWithKey();
    const before = (await scrape(metricsUrl)).value('ots_outbox_relayed_events_total', { service: 'orders' }) ?? 0;
    const submitted = await stack.graphql(client.apiKey, 'mutation { submitOrder(input: { symbol: "ACME", side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id } } }');
    expect(submitted.body.data.submitOrder.orderSubmission.id).toEqual(expect.any(String));
    await expect.poll(async () => (await scrape(metricsUrl)).value('ots_outbox_relayed_events_total', { service: 'orders' })).toBe(before + 1);
    // The relay's next look finds the outbox empty.
    await expect.poll(async () => (await scrape(metricsUrl)).value('ots_outbox_oldest_event_seconds', { service: 'orders' })).toBe(0);
  });

  it("show the outbox orders keeps for fills apart: the fills relayed to fills and the age of the oldest one waiting", async () => {
    const client = await stack.createAccountWithKey();
    const labels = { service: 'orders', table: 'fills_outbox' };
    const before = (await scrape(metricsUrl)).value('ots_consumer_outbox_relayed_events_total', labels) ?? 0;
    const submitted = await stack.graphql(client.apiKey, 'mutation { submitOrder(input: { symbol: "ACME", side: BUY, type: MARKET, quantity: "2" }) { orderSubmission { id } } }');
    const orderId = submitted.body.data.submitOrder.orderSubmission.id;
    const filled = await stack.graphql(client.apiKey, `mutation { recordFill(input: { orderSubmissionId: "${orderId}", executionId: "metrics-1", quantity: "1", price: "10" }) { fill { id } error { code } } }`);
    expect(filled.body.data.recordFill.error).toBeNull();
    // The relay leaves each row for a second, since the request kept its fill (FILLS_RECOVERY_HOLD_MS).
    await expect.poll(async () => (await scrape(metricsUrl)).value('ots_consumer_outbox_relayed_events_total', labels), { timeout: 20_000 }).toBe(before + 1);
    await expect.poll(async () => (await scrape(metricsUrl)).value('ots_consumer_outbox_oldest_event_seconds', labels), { timeout: 20_000 }).toBe(0);
  });

  it('keep label values bounded: operation names beyond the cap are "other", and no account, key id or key is a label', async () => {
    const names = Array.from({ length: MAX_OPERATION_NAMES + 5 }, (_, i) => `Operation${i}`);
    const labels = names.map((name) => operationLabel('cap-test', name));
    expect(new Set(labels).size).toBe(MAX_OPERATION_NAMES + 1);
    expect(labels.slice(MAX_OPERATION_NAMES)).toEqual(Array(5).fill('other'));
    // A name seen before the cap keeps its own label.
    expect(operationLabel('cap-test', 'Operation0')).toBe('Operation0');

    const client = await stack.createAccountWithKey();
    await viewerAs(client);
    const text = (await scrape(metricsUrl)).text;
    expect(text).not.toContain(client.accountId);
    expect(text).not.toContain(client.apiKeyId);
    expect(text).not.toContain(client.apiKey);
  });
  // Last: the guesses leave this process's address over its failure limit.
  it('count refusals by the per-key rate limit and by the failed-authentication limit', async () => {
    const client = await stack.createAccountWithKey();
    const burst = async () => {
      const statuses = [];
      for (let i = 0; i < 7; i += 1) statuses.push((await stack.graphql(client.apiKey, '{ viewer { account { id } } }')).status);
      expect(statuses).toContain(429);
      return statuses.filter((status) => status === 429).length;
    };
    let refused = 0;
    expect(await change(async () => (refused = await burst()), 'ots_rate_limit_refusals_total', { limit: 'api-key' })).toBe(refused);

    const guesses = async () => {
      const statuses = [];
      for (let i = 0; i < 6; i += 1) statuses.push((await stack.graphql('svc_live_not-a-key', '{ viewer { account { id } } }')).status);
      expect(statuses).toContain(429);
    };
    expect(await change(guesses, 'ots_rate_limit_refusals_total', { limit: 'failed-auth' })).toBeGreaterThan(0);
  });
});
