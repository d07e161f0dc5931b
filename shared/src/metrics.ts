import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from './logger.ts';

/**
 * Prometheus metrics of this process: one registry, served on its own port (METRICS_PORT) so that
 * the public gateway port never answers `/metrics`. `npm start` runs every server in one process,
 * so its one registry holds them all, told apart by the `service` label.
 *
 * Labels stay bounded: services, subgraphs, outcomes, layers and pools are fixed sets; operation
 * names are capped per service (`operationLabel`); account ids, key ids and keys are never labels.
 */
const registry = new Registry();

/** Distinct operation names kept per service; later ones are counted as "other". */
export const MAX_OPERATION_NAMES = 100;
const MAX_OPERATION_NAME_LENGTH = 100;
/** The operation label of a request refused before its operation was known (no key, bad key, bad body). */
export const NO_OPERATION = 'none';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const requestsTotal = new Counter({
  name: 'ots_requests_total',
  help: 'GraphQL requests answered, by server, operation name and outcome',
  labelNames: ['service', 'operation', 'outcome'] as const,
  registers: [registry],
});

export const requestDuration = new Histogram({
  name: 'ots_request_duration_seconds',
  help: 'Time from receiving a GraphQL request to sending its answer, by server, operation name and outcome',
  labelNames: ['service', 'operation', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

const subgraphFetchDuration = new Histogram({
  name: 'ots_subgraph_fetch_duration_seconds',
  help: 'Time a call to a subgraph took, by caller (gateway or a subgraph) and subgraph called',
  labelNames: ['caller', 'subgraph'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

const subgraphFetchErrors = new Counter({
  name: 'ots_subgraph_fetch_errors_total',
  help: 'Calls to a subgraph that failed: timeout, unreachable, or an HTTP error status',
  labelNames: ['caller', 'subgraph', 'reason'] as const,
  registers: [registry],
});

export const apiKeyLookups = new Counter({
  name: 'ots_api_key_lookups_total',
  help: 'API key look-ups by the layer that answered: local (in-process), redis, postgres, or none (cache-only look-up that no cache knew)',
  labelNames: ['layer'] as const,
  registers: [registry],
});

export const rateLimitRefusals = new Counter({
  name: 'ots_rate_limit_refusals_total',
  help: 'Requests refused with 429, by limit: api-key (per-key rate) or failed-auth (failed authentications per client address)',
  labelNames: ['limit'] as const,
  registers: [registry],
});

function createOutboxMetrics() {
  return {
    oldestEventSeconds: new Gauge({
      name: 'ots_outbox_oldest_event_seconds',
      help: 'Age of the oldest event waiting in a producer\'s outbox for the events service, as of its relay\'s last pass; 0 when none waits',
      labelNames: ['service'] as const,
      registers: [registry],
    }),
    relayed: new Counter({
      name: 'ots_outbox_relayed_events_total',
      help: 'Events a producer\'s outbox relay handed to the events service',
      labelNames: ['service'] as const,
      registers: [registry],
    }),
    consumerOldestEventSeconds: new Gauge({
      name: 'ots_consumer_outbox_oldest_event_seconds',
      help: 'Age of the oldest event waiting in a producer\'s outbox for another service (its table, e.g. fills_outbox), beyond the time its relay leaves it (fills_outbox\'s: a second, the request keeping the fill itself meanwhile), as of the relay\'s last pass; 0 when none waits longer',
      labelNames: ['service', 'table'] as const,
      registers: [registry],
    }),
    consumerRelayed: new Counter({
      name: 'ots_consumer_outbox_relayed_events_total',
      help: 'Events a producer\'s relay handed to another service from its outbox for it (table)',
      labelNames: ['service', 'table'] as const,
      registers: [registry],
    }),
  };
}
let outboxMetricsOnce: ReturnType<typeof createOutboxMetrics> | undefined;

/** Registered by the first relay, so that processes without one show no outbox. */
export function outboxMetrics(): ReturnType<typeof createOutboxMetrics> {
  return (outboxMetricsOnce ??= createOutboxMetrics());
}

/** Pools are summed by name at scrape time; a pool that has ended drops out. */
const pools = new Set<{ name: string; pool: pg.Pool }>();

export function observePool(name: string, pool: pg.Pool): void {
  pools.add({ name, pool });
}

function poolGauge(name: string, help: string, read: (pool: pg.Pool) => number): Gauge<'pool'> {
  return new Gauge({
    name,
    help,
    labelNames: ['pool'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const sums = new Map<string, number>();
      for (const entry of pools) {
        if (entry.pool.ended) {
          pools.delete(entry);
          continue;
        }
        sums.set(entry.name, (sums.get(entry.name) ?? 0) + read(entry.pool));
      }
      for (const [pool, value] of sums) this.set({ pool }, value);
    },
  });
}

poolGauge('ots_db_pool_connections', 'Postgres connections open, by pool', (pool) => pool.totalCount);
poolGauge('ots_db_pool_idle_connections', 'Postgres connections open and idle, by pool', (pool) => pool.idleCount);
poolGauge('ots_db_pool_waiting_requests', 'Queries waiting for a free Postgres connection, by pool', (pool) => pool.waitingCount);
poolGauge('ots_db_pool_max_connections', 'The most Postgres connections a pool may open', (pool) => pool.options.max ?? 10);

const operationNames = new Map<string, Set<string>>();

/**
 * The label for an operation name: the name itself for the first MAX_OPERATION_NAMES names a
 * service sees, "other" after that (and for absurdly long names), "anonymous" for unnamed operations.
 */
export function operationLabel(service: string, operationName: string | null | undefined): string {
  if (!operationName) return 'anonymous';
  let seen = operationNames.get(service);
  if (!seen) operationNames.set(service, (seen = new Set()));
  if (seen.has(operationName)) return operationName;
  if (seen.size >= MAX_OPERATION_NAMES || operationName.length > MAX_OPERATION_NAME_LENGTH) return 'other';
  seen.add(operationName);
  return operationName;
}

/**
 * A call to a subgraph (the gateway's fetch, or `postJson` between subgraphs) that records its
 * latency and failures under `subgraph_fetch` metrics. It rethrows what the call throws: callers keep
 * deciding what an unreachable subgraph means to their client.
 */
export async function timedSubgraphFetch<Answer extends { status: number }>(
  caller: string,
  subgraph: string,
  fetching: () => Promise<Answer>,
): Promise<Answer> {
  const stop = subgraphFetchDuration.startTimer({ caller, subgraph });
  try {
    const response = await fetching();
    stop();
    if (response.status >= 400) subgraphFetchErrors.inc({ caller, subgraph, reason: `http_${Math.floor(response.status / 100)}xx` });
    return response;
  } catch (error) {
    stop();
    const name = (error as Error).name;
    const timedOut = name === 'TimeoutError' || name === 'AbortError' || (error as { timedOut?: boolean }).timedOut === true;
    subgraphFetchErrors.inc({ caller, subgraph, reason: timedOut ? 'timeout' : 'unreachable' });
    throw error;
  }
}

let defaultMetricsStarted = false;

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` on its own port. Process metrics (CPU, memory, event loop, GC) are added
 * here, once, rather than on import, so that the admin CLI and tests that never serve metrics run no collectors.
 */
export async function startMetricsServer(options: { host: string; port: number; logger: Logger }): Promise<MetricsServer> {
  if (!defaultMetricsStarted) {
    collectDefaultMetrics({ register: registry });
    defaultMetricsStarted = true;
  }
  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at /metrics\n');
      return;
    }
    registry.metrics().then(
      (body) => response.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (error: unknown) => {
        options.logger.error({ err: error }, 'collecting metrics failed');
        response.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ port }, 'metrics served at /metrics');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
