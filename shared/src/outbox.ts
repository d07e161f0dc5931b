import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sql, type ColumnType, type Generated, type Kysely } from 'kysely';
import { startLoop, type BackgroundLoop } from './background.ts';
import { compiledStatement } from './compiled-statement.ts';
import type { EventType } from './contracts/events.ts';
import { INGEST_PATH } from './contracts/internal-routes.ts';
import { postJson, type HttpAnswer } from './http-client.ts';
import { newId, type Uuid } from './ids.ts';
import type { Config, SubgraphSettings } from './config.ts';
import type { Logger } from './logger.ts';
import { outboxMetrics } from './metrics.ts';
import { StandardWebhook, WebhookVerificationError } from './webhook-signature.ts';
import type { ServiceDefinition, ServiceRuntime } from './service.ts';
import type { BaseContext } from './subgraph-server.ts';

/**
 * The transactional outbox (contract section 6): a producing service writes each event into the
 * `outbox` table of its own schema in the same transaction as the change it reports, and a relay
 * forwards committed rows to the events service. A crash before the commit loses the change and
 * its event together; a crash after it leaves the row, which the relay sends (again) until the
 * events service has acknowledged it. The events service keeps one copy per event id, so sending
 * twice doubles nothing.
 */

/** Add to a producer's database interface; `createOutboxTable` makes the table. */
export interface OutboxDatabase {
  outbox: {
    /** The event's id, time-ordered; the events service deduplicates by it. */
    id: string;
    account_id: string;
    type: EventType;
    occurred_at: Date;
    /** The object as the API shows it at that moment: written as JSON text, read back parsed (jsonb). */
    data: ColumnType<Record<string, unknown>, string, never>;
    created_at: Generated<Date>;
  };
}

/**
 * Migration step of a producing service: the outbox table in the service's own schema, or a
 * consumer's outbox (`RelayConsumer`) under its own name, with the same columns.
 */
export async function createOutboxTable(db: Kysely<unknown>, table = 'outbox'): Promise<void> {
  await db.schema
    .createTable(table)
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('occurred_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('data', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
}

export interface NewEvent {
  /**
   * The event's id, for a change that may be written twice: a write redone after its commit was
   * lost gives its event the same id, and the events service keeps one event per id. Default: a new id.
   */
  id?: Uuid;
  accountId: string;
  type: EventType;
  /** When the change happened: the changed row's own timestamp, so the event and the API agree. */
  occurredAt: Date;
  /** The object as the API shows it (Dates serialise as ISO-8601 with milliseconds). */
  data: Record<string, unknown>;
}

/** The outbox row of an event, for a statement that writes it together with its change. */
function outboxRow(event: NewEvent) {
  return {
    id: event.id ?? newId(),
    account_id: event.accountId,
    type: event.type,
    occurred_at: event.occurredAt,
    data: JSON.stringify(event.data),
  };
}

/**
 * Writes an event into the outbox. Call it with the transaction that makes the change, so that
 * the two commit or roll back together.
 */
export async function recordEvent<DB extends OutboxDatabase>(trx: Kysely<DB>, event: NewEvent): Promise<void> {
  await (trx as unknown as Kysely<OutboxDatabase>).insertInto('outbox').values(outboxRow(event)).execute();
}

/**
 * A service besides the events service that needs some of a producer's events, signed and batched
 * the same way. Those events are written into an outbox of the consumer's own as well (`table`, made
 * by `createOutboxTable`; the producer's migration says how its rows get there, in the statement that
 * writes them to `outbox`), and a relay of its own forwards that table to `url`. Each relay waits and
 * backs off for its own destination only: while a consumer is down its rows wait in its table, and
 * every event still reaches the events service, in order, from `outbox`; while the events service is
 * down the consumer still gets its rows.
 */
export interface RelayConsumer {
  table: string;
  /** Read at each pass, as the events service's URL is. */
  url: () => URL;
  /**
   * How long a row waits before it is relayed, for a consumer whose rows the writing request
   * normally delivers itself (recordFill keeps its fill before it answers), so that the relay, which
   * is the recovery of a request that failed, sends after that request's own insert (the consumer
   * then changes nothing) rather than contending with it, and in bigger batches. Such a relay is not
   * woken by answered requests; it looks every `holdMs` (or the relay interval, if longer).
   */
  holdMs?: number;
}

/**
 * Relays authenticate with a Standard Webhooks signature under EVENTS_INGEST_SECRET, the same
 * scheme (and library) the service signs its own webhooks with. A service-wide secret rather than
 * a gateway assertion: a relay forwards many accounts' events at once, and a producer that held
 * the assertion key could act as any account on every subgraph, while this secret only lets it
 * add events. The signature's timestamp bounds a replay to five minutes, and a replayed batch
 * doubles nothing since events are kept once per id.
 */
export function signIngestRequest(secret: string, body: string, now = new Date()): Record<string, string> {
  const id = `ingest_${randomUUID()}`;
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new StandardWebhook(secret).sign(id, now, body),
  };
}

export interface OutboxRelayOptions {
  /** The producing service, for the metrics. */
  service: string;
  db: Kysely<OutboxDatabase>;
  /** The table the relay forwards: `outbox` (the default), whose rows go to the events service, or a consumer's. */
  table?: string;
  /** Where the rows go, read at each pass (tests start services on free ports): the events service's ingest route, or a consumer's. */
  url: () => URL;
  secret: string;
  log: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** How long to wait when the outbox was empty. */
  intervalMs: number;
  /** Rows younger than this stay where they are (`RelayConsumer.holdMs`); default 0. */
  holdMs?: number;
  batchSize?: number;
  timeoutMs?: number;
  /** How many requests the producing service is serving: from two, its relay waits its longer interval. */
  requestsInFlight?: () => number;
}

/** A relay's destination (the events service, or a consumer) did not take its batch: the relay backs off. */
export class EventsUnavailableError extends Error {}

// Compiled and prepared once per outbox table: a relay runs them on every pass, many times a second
// under load. The outbox's one index, its primary key, serves both whatever the outbox holds.
function outboxStatements(table: string) {
  const outbox = table as 'outbox';
  return {
    oldestEvents: compiledStatement(
      (db: Kysely<OutboxDatabase>, p: { limit: number }) =>
        db
          .selectFrom(outbox)
          .select(['id', 'account_id', 'type', 'occurred_at', sql<string>`data::text`.as('data'), 'created_at'])
          .orderBy('id')
          .limit(p.limit),
      { prepared: true },
    ),
    // Read oldest first, as `oldestEvents`; the young rows it reads past are at most `holdMs` of writes.
    heldBackEvents: compiledStatement(
      (db: Kysely<OutboxDatabase>, p: { limit: number; holdSeconds: number }) =>
        db
          .selectFrom(outbox)
          .select(['id', 'account_id', 'type', 'occurred_at', sql<string>`data::text`.as('data'), 'created_at'])
          .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${p.holdSeconds})`)
          .orderBy('id')
          .limit(p.limit),
      { prepared: true },
    ),
    deleteEvents: compiledStatement(
      (db: Kysely<OutboxDatabase>, p: { ids: readonly string[] }) => db.deleteFrom(outbox).where(sql<boolean>`id = any(${p.ids}::uuid[])`),
      { prepared: true },
    ),
  };
}

const statementsByTable = new Map<string, ReturnType<typeof outboxStatements>>();

function statementsOf(table: string): ReturnType<typeof outboxStatements> {
  let statements = statementsByTable.get(table);
  if (!statements) statementsByTable.set(table, (statements = outboxStatements(table)));
  return statements;
}

/**
 * The body of an IngestBatch (contracts/internal-routes.ts), each event's data written in as the JSON text Postgres holds: parsing
 * it into objects only to write it out again was most of what an event cost the relay (the events
 * service parses the body once to check it, then stores the data from the same text).
 */
function ingestBody(rows: readonly { id: string; account_id: string; type: string; occurred_at: Date; data: string }[]): string {
  const events = rows.map(
    (row) =>
      `{"id":${JSON.stringify(row.id)},"accountId":${JSON.stringify(row.account_id)},"type":${JSON.stringify(row.type)},` +
      `"occurredAt":"${row.occurred_at.toISOString()}","data":${row.data}}`,
  );
  return `{"events":[${events.join(',')}]}`;
}

/**
 * One pass: sends the oldest rows of the relay's outbox to its destination and deletes them once it
 * has acknowledged them. Rows are read without a lock (holding one across the HTTP call would keep a
 * transaction open, which holds back every commit-ordered feed of the server); two relays that
 * send the same rows at once are harmless, since the events service (and every consumer) keeps one
 * copy per id. Returns how many rows it forwarded.
 */
export async function relayOutboxOnce(options: OutboxRelayOptions): Promise<number> {
  const table = options.table ?? 'outbox';
  const { oldestEvents, heldBackEvents, deleteEvents } = statementsOf(table);
  const limit = options.batchSize ?? 100;
  const rows = options.holdMs
    ? await heldBackEvents(options.db, { limit, holdSeconds: options.holdMs / 1000 })
    : await oldestEvents(options.db, { limit });
  // The outbox lag: how long the oldest waiting event has waited (ids are time-ordered, so it is the first).
  // The events service's outbox keeps its metrics' names; a consumer's outbox has its own, by table.
  const metrics = outboxMetrics();
  // A held relay's rows wait the hold by design: only what waits longer is lag.
  const waited = rows[0] ? Math.max(0, (Date.now() - rows[0].created_at.getTime() - (options.holdMs ?? 0)) / 1000) : 0;
  if (table === 'outbox') metrics.oldestEventSeconds.set({ service: options.service }, waited);
  else metrics.consumerOldestEventSeconds.set({ service: options.service, table }, waited);
  if (rows.length === 0) return 0;
  await postBatch(options, options.url(), rows);
  await deleteEvents(options.db, { ids: rows.map((row) => row.id) });
  if (table === 'outbox') metrics.relayed.inc({ service: options.service }, rows.length);
  else metrics.consumerRelayed.inc({ service: options.service, table }, rows.length);
  return rows.length;
}

async function postBatch(options: OutboxRelayOptions, url: URL, rows: Parameters<typeof ingestBody>[0]): Promise<void> {
  const body = ingestBody(rows);
  let answer: HttpAnswer;
  try {
    answer = await postJson({ url, headers: signIngestRequest(options.secret, body), body, timeoutMs: options.timeoutMs ?? 5_000 });
  } catch (error) {
    throw new EventsUnavailableError(`${url.origin} did not answer: ${(error as Error).message}`);
  }
  if (answer.status < 200 || answer.status >= 300) throw new EventsUnavailableError(`${url.origin} answered HTTP ${answer.status}`);
}

const MAX_BACKOFF_MS = 30_000;

/**
 * Every answered request wakes the relay; at most one pass starts per interval, so that a burst of
 * writes goes to the events service in a few batches. A pass (read, signed HTTP call, the events
 * service's insert, delete) costs the Node thread about the same whatever its size, which matters
 * only when the thread has no time to spare. So the interval follows the load of the process: 10 ms while it has time to spare, 50 ms
 * while requests are waiting for the thread and an event's longer wait buys them time. Two signs of
 * that: the event loop busy nearly all the time, or the producing service serving two requests or
 * more as the pass starts, which says so from the first requests of a burst, before the loop's load,
 * smoothed over passes, crosses 90%. The measurements behind both numbers are in the orders README
 * (Performance, the figures behind the shared code).
 */
export function relayWakeIntervalMs(eventLoopUtilization: number, requestsInFlight: number): number {
  return eventLoopUtilization >= 0.9 || requestsInFlight >= BUSY_REQUESTS ? 50 : 10;
}

/** Requests in flight at the producer from which it is busy: one is the request a single client waits on. */
const BUSY_REQUESTS = 2;

/**
 * The relay's interval after each pass, from the event loop's utilization since the pass before,
 * smoothed over passes (a window of its own reads a few back-to-back requests, or the start-up of
 * the process, as saturation, and made single clients' events wait the longer interval), and from
 * the requests the producing service is serving.
 */
function relayWakeIntervalByLoad(requestsInFlight: () => number): () => number {
  let since = performance.eventLoopUtilization();
  let load = 0;
  return () => {
    const now = performance.eventLoopUtilization();
    load += LOAD_SMOOTHING * (performance.eventLoopUtilization(now, since).utilization - load);
    since = now;
    return relayWakeIntervalMs(load, requestsInFlight());
  };
}

/** Each pass's window weighs a fifth: six to twelve saturated passes (a tenth to a quarter of a second) cross 90%. */
const LOAD_SMOOTHING = 0.2;

/**
 * Starts a relay: a full batch is followed at once by the next, an empty outbox is looked at again
 * after `intervalMs`, and while its destination is down the wait doubles up to 30 s, so a long
 * outage costs neither side much and nothing written meanwhile is lost.
 */
export function startOutboxRelay(options: OutboxRelayOptions): BackgroundLoop {
  const batchSize = options.batchSize ?? 100;
  const table = options.table ?? 'outbox';
  let backoffMs = 0;
  let backoffUntil = 0;
  return startLoop(
    `outbox relay (${table})`,
    async () => {
      // A wake-up (a request answered) does not cut a back-off short.
      const waitMs = backoffUntil - performance.now();
      if (waitMs > 0) return waitMs;
      try {
        const sent = await relayOutboxOnce({ ...options, batchSize });
        if (backoffMs > 0) options.log.info({ outbox: table }, 'the destination answers again; outbox relay resumed');
        backoffMs = 0;
        return sent === batchSize ? 0 : Math.max(options.intervalMs, options.holdMs ?? 0);
      } catch (error) {
        if (!(error instanceof EventsUnavailableError)) throw error;
        if (backoffMs === 0) options.log.warn({ err: error, outbox: table }, 'outbox relay: destination unavailable, backing off');
        backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(options.intervalMs, backoffMs * 2));
        backoffUntil = performance.now() + backoffMs;
        return backoffMs;
      }
    },
    options.log,
    { minWakeIntervalMs: relayWakeIntervalByLoad(options.requestsInFlight ?? (() => 0)) },
  );
}

/**
 * A producing service's relays, as parts of its ServiceDefinition: `startBackground` runs one for
 * `outbox` and one for each consumer's outbox, and `registerRoutes` wakes them (but a held consumer's,
 * `RelayConsumer.holdMs`) after every answered request — whatever the request committed is committed by then — so an event leaves at once instead
 * of at the next poll. (NOTIFY would wake relays in other processes too, but takes a server-wide lock
 * at every commit that notifies.)
 */
export function outboxRelay<DB extends OutboxDatabase, Context extends BaseContext>(
  consumersOf: (config: SubgraphSettings) => RelayConsumer[] = () => [],
): Pick<
  ServiceDefinition<DB, Context>,
  'startBackground' | 'registerRoutes'
> {
  const wokenRelays = new WeakMap<ServiceRuntime<DB>, BackgroundLoop[]>();
  const inFlight = new WeakMap<ServiceRuntime<DB>, RequestsInFlight>();
  const requestsOf = (runtime: ServiceRuntime<DB>) => {
    let requests = inFlight.get(runtime);
    if (!requests) inFlight.set(runtime, (requests = new RequestsInFlight()));
    return requests;
  };
  return {
    startBackground: (runtime) => {
      const { config } = runtime;
      const relayOf = (table: string, url: () => URL, holdMs?: number) =>
        startOutboxRelay({
          service: runtime.service,
          db: runtime.db as unknown as Kysely<OutboxDatabase>,
          table,
          url,
          secret: requireIngestSecret(config),
          log: runtime.log,
          intervalMs: config.outboxRelayIntervalMs,
          requestsInFlight: () => requestsOf(runtime).count,
          holdMs,
        });
      const consumers = consumersOf(config);
      const woken = [
        relayOf('outbox', () => new URL(INGEST_PATH, config.subgraphUrls.events)),
        ...consumers.filter((consumer) => !consumer.holdMs).map((consumer) => relayOf(consumer.table, consumer.url)),
      ];
      const held = consumers.filter((consumer) => consumer.holdMs).map((consumer) => relayOf(consumer.table, consumer.url, consumer.holdMs));
      const started = [...woken, ...held];
      wokenRelays.set(runtime, woken);
      return async () => {
        await Promise.all(started.map((relay) => relay.stop()));
      };
    },
    registerRoutes: async (app, runtime) => {
      requestsOf(runtime).countOn(app);
      app.addHook('onResponse', async (request) => {
        if (request.method === 'POST') for (const relay of wokenRelays.get(runtime) ?? []) relay.wake();
      });
    },
  };
}

/** Events and the producers cannot work without the ingest secret; in production it has no default. */
export function requireIngestSecret(config: Pick<Config, 'eventsIngestSecret'>): string {
  if (!config.eventsIngestSecret) throw new Error('EVENTS_INGEST_SECRET is required by the events service and the outbox relays');
  return config.eventsIngestSecret;
}

/** The requests a server is serving: each counts from its arrival until its connection has answered it or given up. */
export class RequestsInFlight {
  count = 0;

  countOn(app: FastifyInstance): void {
    app.addHook('onRequest', async (_request, reply) => {
      this.count += 1;
      reply.raw.once('close', () => {
        this.count -= 1;
      });
    });
  }
}

/** A route that outbox relays post to (events' ingest, fills' recorded fills), and what it does with a verified body. */
export interface RelayRoute {
  path: string;
  secret: string;
  bodyLimit: number;
  /** The 401's detail, naming which signature was wrong. */
  refusal: string;
  handle(body: unknown, text: string, reply: FastifyReply): Promise<unknown>;
}

/**
 * Serves a relay route: the Standard Webhooks signature is checked over the exact bytes before
 * `handle` sees the parsed body (401 otherwise; 400 for a body that is not JSON). Registered in a
 * scope of its own so that its text parser leaves /graphql alone.
 */
export async function registerRelayRoute(app: FastifyInstance, route: RelayRoute): Promise<void> {
  const webhook = new StandardWebhook(route.secret);
  await app.register(async (scope) => {
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: route.bodyLimit }, (_request, body, done) => done(null, body));
    scope.post(route.path, async (request, reply) => {
      const text = typeof request.body === 'string' ? request.body : '';
      const header = (name: string) => String(request.headers[name] ?? '');
      let body: unknown;
      try {
        body = webhook.verify(text, {
          'webhook-id': header('webhook-id'),
          'webhook-timestamp': header('webhook-timestamp'),
          'webhook-signature': header('webhook-signature'),
        });
      } catch (error) {
        if (error instanceof WebhookVerificationError) return reply.code(401).send({ detail: route.refusal });
        return reply.code(400).send({ detail: 'The body is not JSON' });
      }
      return route.handle(body, text, reply);
    });
  });
}
