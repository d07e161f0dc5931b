import { sql, type Generated, type Kysely, type Selectable } from 'kysely';
import { aheadInCommitOrder, inCommitOrder, positionOf, type FeedPosition } from '@ots/shared/commit-order';
import { EVENTS_WAKE_CHANNEL, WAKE_EVERYONE } from '@ots/shared/event-feed';
import { newId, type Uuid } from '@ots/shared/ids';
import { inKeysetOrder, type KeysetPosition } from '@ots/shared/pagination';
import { DELIVERY_WINDOW_MS, RETENTION_MS } from './domain.ts';

export type EndpointStatus = 'ENABLED' | 'DISABLED';
export type MessageState = 'PENDING' | 'DELIVERED' | 'FAILED';

/** Ids are `Uuid`s: Postgres hands a uuid back in that form, and an id a client or relay sent reaches a query only once parsed (resolvers.ts, ingest.ts). */
export interface EventsDatabase {
  events: {
    id: Uuid;
    account_id: string;
    type: string;
    occurred_at: Date;
    data: unknown;
    received_at: Generated<Date>;
    /** xid8 of the ingesting transaction, set by the commit-order trigger; pg hands it over as a string. */
    commit_xid: Generated<string>;
  };
  webhook_endpoints: {
    id: Uuid;
    account_id: string;
    url: string;
    event_types: string[];
    description: string | null;
    status: EndpointStatus;
    disabled_reason: string | null;
    secret: string;
    previous_secret: string | null;
    previous_secret_expires_at: Date | null;
    failing_since: Date | null;
    /** The latest failed attempt's time: a failure long after it starts a new run (domain.ts `failureStreakStart`). */
    last_failed_at: Date | null;
    created_at: Date;
    updated_at: Date;
  };
  webhook_messages: {
    id: Uuid;
    account_id: string;
    endpoint_id: Uuid;
    event_id: Uuid;
    manual: boolean;
    state: MessageState;
    attempts: number;
    next_attempt_at: Date;
    claim_token: string | null;
    created_at: Date;
  };
  webhook_attempts: {
    id: Uuid;
    account_id: string;
    endpoint_id: Uuid;
    message_id: Uuid;
    event_id: Uuid;
    attempt: number;
    attempted_at: Date;
    status_code: number | null;
    failure: string | null;
    succeeded: boolean;
    duration_ms: number;
  };
}

export type EventsDb = Kysely<EventsDatabase>;
export type EventRow = Selectable<EventsDatabase['events']>;
export type EndpointRow = Selectable<EventsDatabase['webhook_endpoints']>;
export type AttemptRow = Selectable<EventsDatabase['webhook_attempts']>;

export interface IncomingEvent {
  id: Uuid;
  accountId: string;
  type: string;
  occurredAt: Date;
  data: unknown;
}

export interface Ingested {
  /** Events stored now (not before). */
  accepted: number;
  /** Messages queued for delivery: what the dispatcher has to send. */
  queued: number;
}

/**
 * Adds the events not stored yet and one pending message per event and enabled endpoint of its
 * account that subscribes to its type, in one statement (so atomically, without a transaction of
 * its own). An event already stored (a relay that sends again after a crash) is skipped whole, so
 * it is neither listed nor sent twice.
 *
 * `batchJson` is the relay's batch as it arrived (an `IngestBatch`, checked by `parseIngestBatch`):
 * Postgres reads the events from that text, so each event's data is stored as the relay sent it,
 * never built into objects and written out again here.
 */
export async function ingestEvents(db: EventsDb, batchJson: string, now: Date): Promise<Ingested> {
  const { rows } = await sql<{ accepted: number; queued: number; woken: number }>`
    with inserted as (
      insert into events.events (id, account_id, type, occurred_at, data)
      select e.id, e."accountId", e.type, e."occurredAt", e.data
      from jsonb_to_recordset(${batchJson}::jsonb -> 'events') as e (id uuid, "accountId" uuid, type text, "occurredAt" timestamptz, data jsonb)
      on conflict (id) do nothing
      returning id, account_id, type
    ), queued as (
      insert into events.webhook_messages (id, account_id, endpoint_id, event_id, manual, state, attempts, next_attempt_at, created_at)
      select gen_random_uuid(), e.account_id, e.id, i.id, false, 'PENDING', 0, ${now}, ${now}
      from inserted i
      join events.webhook_endpoints e on e.account_id = i.account_id
      where e.status = 'ENABLED' and (cardinality(e.event_types) = 0 or i.type = any(e.event_types))
      on conflict do nothing
      returning 1
    ), accounts as (
      select string_agg(distinct account_id::text, ',') as ids from inserted
    ), woken as (
      -- Delivered when the ingest commits: the gateways' streams of these accounts look again.
      select pg_notify(${EVENTS_WAKE_CHANNEL}, case when length(ids) < 7900 then ids else ${WAKE_EVERYONE} end)
      from accounts where ids is not null
    )
    select (select count(*) from inserted)::int as accepted, (select count(*) from queued)::int as queued,
      (select count(*) from woken)::int as woken`.execute(db);
  const { accepted, queued } = rows[0]!;
  return { accepted, queued };
}

/** Reads show 30 days exactly; the hourly clean-up deletes what is older. */
const retained = () => new Date(Date.now() - RETENTION_MS);

export async function findEventsByIds(db: EventsDb, accountId: string, ids: readonly Uuid[]): Promise<EventRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('events')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', ids)
    .where('occurred_at', '>=', retained())
    .execute();
}

export interface EventFilter {
  types: readonly string[] | undefined;
  occurredAfter: Date | undefined;
}

/** Whether a row is shown and matches the filter, as a column: the feed is read past rows that do not. */
function matchesFilter(filter: EventFilter) {
  const conditions = [
    sql<boolean>`occurred_at >= ${retained()}`,
    ...(filter.types ? [sql<boolean>`type = any(${[...filter.types]}::text[])`] : []),
    ...(filter.occurredAfter ? [sql<boolean>`occurred_at > ${filter.occurredAfter}`] : []),
  ];
  return sql<boolean>`(${sql.join(conditions, sql` and `)})`;
}

/** One row a feed read went over: its place in the order, and the event when it matches the filter. */
export interface ScannedEvent {
  position: FeedPosition;
  /** Written by a transaction at or above the horizon: the feed cannot hand it out yet (commit-order.ts). */
  heldBack: boolean;
  /** The row, when it matches the filter and falls among the first `matchLimit` that do; otherwise undefined. */
  event: EventRow | undefined;
  matches: boolean;
}

export interface EventScan extends EventFilter {
  after: FeedPosition | undefined;
  /** Rows to go over, matching or not: what bounds the read's cost, however sparse the filter. */
  scanLimit: number;
  /** Matching rows to fetch whole; a matching row beyond them is marked, not fetched. */
  matchLimit: number;
  /**
   * A horizon read before (commit-order.ts `readFeedHorizon`) to stop at; or `'ahead'`: go on past
   * the statement's own horizon, marking what it holds back (`aheadInCommitOrder`), as a stream does.
   */
  horizon: string | undefined | 'ahead';
}

/**
 * Goes over the account's rows after `scan.after` in commit order (shared/src/commit-order.ts), every
 * type alike, at most `scan.scanLimit` of them, and tells which match the filter. A reader moves on
 * past what it went over, not only past what matched: a sparse filter then never reads the same
 * rows twice (every row after the last one it was given would otherwise be read again on every look).
 * Rows kept for less than the retention period count as not matching.
 */
export async function scanEvents(db: EventsDb, accountId: string, scan: EventScan): Promise<ScannedEvent[]> {
  const feed = db
    .selectFrom('events')
    .select(['id', 'commit_xid', 'account_id', 'type', 'occurred_at', 'data', 'received_at'])
    .select(matchesFilter(scan).as('matches'))
    .where('account_id', '=', accountId);
  const scanned = (
    scan.horizon === 'ahead' && scan.after
      ? aheadInCommitOrder(feed, { after: scan.after, limit: scan.scanLimit })
      : inCommitOrder(feed.select(sql<boolean>`false`.as('held_back')), { after: scan.after, limit: scan.scanLimit, horizon: scan.horizon === 'ahead' ? undefined : scan.horizon })
  ).as('scanned');
  // Only the first `matchLimit` matching rows carry their data back: a filter that matches most rows costs what an unfiltered page does.
  const rows = await db
    .selectFrom(scanned)
    .select(['id', 'commit_xid', 'account_id', 'type', 'occurred_at', 'received_at', 'held_back', 'matches'])
    .select(
      sql<unknown>`case when matches and count(*) filter (where matches) over (order by commit_xid, id) <= ${scan.matchLimit} then data end`.as('data'),
    )
    .orderBy('commit_xid')
    .orderBy('id')
    .execute();
  return rows.map(({ held_back, matches, ...row }) => ({
    position: positionOf(row),
    heldBack: held_back,
    matches,
    event: matches && row.data !== null ? row : undefined,
  }));
}

export interface TypesSeek {
  types: readonly string[];
  after: FeedPosition | undefined;
  /** A horizon read before (commit-order.ts `readFeedHorizon`), or the statement's own. */
  horizon: string | undefined;
  limit: number;
}

/**
 * The account's next events of the given types after `seek.after` in commit order, below the horizon,
 * at most `seek.limit`: each type's read seeks through the (account, type, commit position) index and
 * stops at the limit, whatever other events lie between; one statement, so one snapshot and one
 * horizon for all of them.
 */
export async function seekEventsOfTypes(db: EventsDb, accountId: string, seek: TypesSeek): Promise<EventRow[]> {
  const kept = matchesFilter({ types: undefined, occurredAfter: undefined });
  const ofType = (type: string) =>
    db
      .selectFrom(
        inCommitOrder(
          db.selectFrom('events').select(['id', 'commit_xid', 'account_id', 'type', 'occurred_at', 'data', 'received_at']).where('account_id', '=', accountId).where('type', '=', type).where(kept),
          { after: seek.after, limit: seek.limit, horizon: seek.horizon },
        ).as('of_type'),
      )
      .selectAll();
  const [first, ...others] = [...new Set(seek.types)].map(ofType);
  if (!first) return [];
  const seeks = others.reduce((union, next) => union.unionAll(next), first);
  return db.selectFrom(seeks.as('seeks')).selectAll().orderBy('commit_xid').orderBy('id').limit(seek.limit).execute();
}

/**
 * How many of the account's events matching the filter lie beyond `query.after` in the feed, counted
 * up to `countUpTo`, among the next `scanLimit` rows of the feed (a sparse filter's count stops there).
 */
export async function countEventsAfter(
  db: EventsDb,
  accountId: string,
  query: EventFilter & { after: FeedPosition; countUpTo: number; scanLimit: number },
): Promise<number> {
  const select = db
    .selectFrom('events')
    .select(['id', 'commit_xid'])
    .select(matchesFilter(query).as('matches'))
    .where('account_id', '=', accountId);
  const scanned = inCommitOrder(select, { after: query.after, limit: query.scanLimit }).as('scanned');
  const row = await db
    .selectFrom(scanned)
    .select(sql<string>`count(*) filter (where matches)`.as('count'))
    .executeTakeFirstOrThrow();
  return Math.min(Number(row.count), query.countUpTo);
}

/** Retention: deletes up to `batch` events older than `cutoff` (their messages and attempts go with them). */
export async function deleteEventsBefore(db: EventsDb, cutoff: Date, batch: number): Promise<number> {
  const result = await db
    .deleteFrom('events')
    .where('id', 'in', (eb) => eb.selectFrom('events').select('id').where('occurred_at', '<', cutoff).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Serialises endpoint creation per account for the rest of the transaction, so that two concurrent
 * creates cannot both see 15 endpoints and make 17.
 */
export async function lockAccountEndpoints(trx: EventsDb, accountId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`webhook_endpoints:${accountId}`}, 0))`.execute(trx);
}

export async function countEndpoints(trx: EventsDb, accountId: string): Promise<number> {
  const row = await trx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export interface NewEndpoint {
  url: string;
  eventTypes: string[];
  description: string | null;
  secret: string;
}

export async function insertEndpoint(trx: EventsDb, accountId: string, endpoint: NewEndpoint, now: Date): Promise<EndpointRow> {
  return trx
    .insertInto('webhook_endpoints')
    .values({
      id: newId(now.getTime()),
      account_id: accountId,
      url: endpoint.url,
      event_types: endpoint.eventTypes,
      description: endpoint.description,
      status: 'ENABLED',
      disabled_reason: null,
      secret: endpoint.secret,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      last_failed_at: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findEndpointsByIds(db: EventsDb, accountId: string, ids: readonly Uuid[]): Promise<EndpointRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).where('id', 'in', ids).execute();
}

/** Oldest first; an account has at most 16. */
export async function listEndpoints(db: EventsDb, accountId: string): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
}

/**
 * `for no key update`: the id never changes, so inserts of messages and attempts referring to the
 * endpoint (which take a key-share lock) need not wait for an edit, nor deadlock with it.
 */
export async function lockEndpoint(trx: EventsDb, accountId: string, id: Uuid): Promise<EndpointRow | undefined> {
  return trx
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .forNoKeyUpdate()
    .executeTakeFirst();
}

export type EndpointChanges = Partial<
  Pick<EndpointRow, 'url' | 'event_types' | 'description' | 'status' | 'disabled_reason' | 'secret' | 'previous_secret' | 'previous_secret_expires_at' | 'failing_since' | 'last_failed_at'>
>;

export async function updateEndpoint(trx: EventsDb, accountId: string, id: Uuid, changes: EndpointChanges, now: Date): Promise<EndpointRow> {
  return trx
    .updateTable('webhook_endpoints')
    .set({ ...changes, updated_at: now })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function deleteEndpoint(trx: EventsDb, accountId: string, id: Uuid): Promise<EndpointRow | undefined> {
  return trx.deleteFrom('webhook_endpoints').where('account_id', '=', accountId).where('id', '=', id).returningAll().executeTakeFirst();
}

/**
 * Disabling parks the endpoint's pending messages beyond every claim's range (`infinity`), so the
 * dispatcher's index scan never walks over them while the endpoint stays disabled. A message claimed
 * now keeps its lease (its attempt is in flight); the attempt, once recorded, parks it if it is
 * still pending (dispatcher.ts `recordAttempt`).
 */
export async function parkPendingMessages(trx: EventsDb, accountId: string, endpointId: Uuid): Promise<void> {
  await trx
    .updateTable('webhook_messages')
    .set({ next_attempt_at: sql<Date>`'infinity'::timestamptz` })
    .where('account_id', '=', accountId)
    .where('endpoint_id', '=', endpointId)
    .where('state', '=', 'PENDING')
    .where('claim_token', 'is', null)
    .execute();
}

/**
 * Enabling again: messages that waited while the endpoint was disabled are due at once, and those
 * past their 3-day window are marked failed (section 6: retried for 3 days, then failed); before,
 * they were sent once more. A claimed one is left to its claim: made due while its attempt is in
 * flight, it would be claimed and sent a second time at once.
 */
export async function resumePendingMessages(trx: EventsDb, accountId: string, endpointId: Uuid, now: Date): Promise<void> {
  const windowStart = new Date(now.getTime() - DELIVERY_WINDOW_MS);
  await trx
    .updateTable('webhook_messages')
    .set({ next_attempt_at: now, state: sql<MessageState>`case when created_at < ${windowStart} then 'FAILED' else state end` })
    .where('account_id', '=', accountId)
    .where('endpoint_id', '=', endpointId)
    .where('state', '=', 'PENDING')
    .where('claim_token', 'is', null)
    .execute();
}

export async function insertManualMessage(trx: EventsDb, accountId: string, endpointId: Uuid, eventId: Uuid, now: Date): Promise<void> {
  await trx
    .insertInto('webhook_messages')
    .values({
      id: newId(now.getTime()),
      account_id: accountId,
      endpoint_id: endpointId,
      event_id: eventId,
      manual: true,
      state: 'PENDING',
      attempts: 0,
      next_attempt_at: now,
      claim_token: null,
      created_at: now,
    })
    .execute();
}

/** A claimed message with what its attempt needs. */
export interface ClaimedMessage {
  id: Uuid;
  account_id: string;
  endpoint_id: Uuid;
  event_id: Uuid;
  attempts: number;
  created_at: Date;
  claim_token: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  type: string;
  occurred_at: Date;
  data: unknown;
}

/** How much a claim may take, given what this claimer already has in flight. */
export interface ClaimLimits {
  /** Messages beyond each idle endpoint's first (see claimDueMessages). */
  limit: number;
  /** In flight at once to an endpoint whose attempts are succeeding (or that has none recorded yet). */
  perEndpoint: number;
  /** In flight at once to an endpoint whose every attempt fails (`failing_since` set). */
  perFailingEndpoint: number;
  /** Endpoints with attempts of this claimer in flight, and how many each. */
  inFlight: ReadonlyMap<Uuid, number>;
}

/**
 * Claims due messages of enabled endpoints, across accounts (a background job, like the fills
 * sweeper). Every endpoint with nothing in flight here gets its oldest due message, outside
 * `limit`: so however many endpoints hang, one that is idle is never kept waiting behind them
 * (contract section 6: endpoints proceed independently). Then, within `limit`, the oldest of the
 * rest, at most `perEndpoint` in flight per endpoint, or `perFailingEndpoint` to an endpoint
 * that is failing: a receiver that hangs holds one attempt, not a share of the room others need.
 * `for update skip locked` lets replicas claim side by side without waiting for or taking each
 * other's rows; the claim then pushes `next_attempt_at` past the lease, so the row is not due for
 * anyone while its attempt is in flight — without holding a transaction open during the HTTP call
 * (which would also hold back every commit-ordered feed of the server). If the claimer dies, the
 * message is due again when the lease ends: at least once.
 *
 * A message still under a claim when it is due again is one whose claimer died, or failed to record
 * the attempt (none recorded then): like an interrupted attempt it is no step of the retry schedule,
 * so this claim does not count it again. Nothing then marks the message failed after an answer, so a
 * message whose attempt always kills its process would be claimed every lease until its event
 * expires: one past its 3-day window is marked failed here instead of claimed.
 */
export async function claimDueMessages(db: EventsDb, now: Date, leaseMs: number, limits: ClaimLimits, token: string): Promise<ClaimedMessage[]> {
  const leaseUntil = new Date(now.getTime() + leaseMs);
  const firstDueBefore = new Date(now.getTime() - DELIVERY_WINDOW_MS);
  const busyIds = [...limits.inFlight.keys()];
  const busyCounts = busyIds.map((id) => limits.inFlight.get(id)!);
  const result = await sql<ClaimedMessage>`
    with busy as (
      select * from unnest(${busyIds}::uuid[], ${busyCounts}::int[]) as b(endpoint_id, in_flight)
    ), due as (
      select d.id, d.next_attempt_at, d.lapsed_past_window, e.id as endpoint_id, busy.endpoint_id is null as idle
      from events.webhook_endpoints e
      left join busy on busy.endpoint_id = e.id
      cross join lateral (
        select m.id, m.next_attempt_at, m.claim_token is not null and m.created_at < ${firstDueBefore} as lapsed_past_window
        from events.webhook_messages m
        where m.endpoint_id = e.id and m.state = 'PENDING' and m.next_attempt_at <= ${now}
        order by m.next_attempt_at
        limit greatest(0, (case when e.failing_since is null then ${limits.perEndpoint}::int else ${limits.perFailingEndpoint}::int end)
                          - coalesce(busy.in_flight, 0))
        for update of m skip locked
      ) d
      where e.status = 'ENABLED'
    ), placed as (
      select id, next_attempt_at, lapsed_past_window, idle and row_number() over (partition by endpoint_id order by next_attempt_at, id) = 1 as opens_idle_endpoint
      from due
    ), chosen as (
      select id, lapsed_past_window from placed where opens_idle_endpoint
      union all
      (select id, lapsed_past_window from placed where not opens_idle_endpoint order by next_attempt_at limit ${limits.limit})
    ), failed as (
      update events.webhook_messages m set state = 'FAILED', claim_token = null
      from chosen where m.id = chosen.id and chosen.lapsed_past_window
    ), claimed as (
      update events.webhook_messages m
      set next_attempt_at = ${leaseUntil}, attempts = m.attempts + (m.claim_token is null)::int, claim_token = ${token}
      from chosen where m.id = chosen.id and not chosen.lapsed_past_window
      returning m.*
    )
    select c.id, c.account_id, c.endpoint_id, c.event_id, c.attempts, c.created_at, c.claim_token,
           e.url, e.secret, e.previous_secret, e.previous_secret_expires_at, ev.type, ev.occurred_at, ev.data
    from claimed c
    join events.webhook_endpoints e on e.id = c.endpoint_id
    join events.events ev on ev.id = c.event_id`.execute(db);
  return result.rows;
}

export interface AttemptOutcome {
  attemptedAt: Date;
  statusCode: number | null;
  failure: string | null;
  succeeded: boolean;
  durationMs: number;
}

/**
 * An attempt's row, inserted only while its message is there: removing the endpoint, or the
 * retention clean-up deleting the event, cascades the message away, and an attempt in flight then
 * has nothing left to record. The message is locked as the foreign key checks lock it (key share),
 * so that a delete committed while the statement runs is seen as the message's absence instead of
 * failing those checks. `whileAlso` gates it further, before that lock.
 */
function insertAttemptWhileMessageExists(message: ClaimedMessage, outcome: AttemptOutcome, whileAlso = sql`true`) {
  return sql`
    insert into events.webhook_attempts
      (id, account_id, endpoint_id, message_id, event_id, attempt, attempted_at, status_code, failure, succeeded, duration_ms)
    select ${newId(outcome.attemptedAt.getTime())}::uuid, m.account_id, m.endpoint_id, m.id, m.event_id, ${message.attempts}::int,
      ${outcome.attemptedAt}::timestamptz, ${outcome.statusCode}::int, ${outcome.failure}::text, ${outcome.succeeded}::boolean, ${outcome.durationMs}::int
    from events.webhook_messages m
    where m.account_id = ${message.account_id} and m.id = ${message.id} and ${whileAlso}
    for key share of m`;
}

/** Records a failed attempt; false when its message is gone (`insertAttemptWhileMessageExists`). */
export async function insertAttempt(trx: EventsDb, message: ClaimedMessage, outcome: AttemptOutcome): Promise<boolean> {
  const result = await insertAttemptWhileMessageExists(message, outcome).execute(trx);
  return Number(result.numAffectedRows) > 0;
}

/**
 * Records an attempt that delivered, in one statement: the attempt, its message delivered (if this
 * claimer still holds it, or it was marked failed meanwhile) and the endpoint's failure streak
 * ended. The endpoint is locked as `lockEndpoint` locks it, so that attempts of one endpoint record
 * one after another, but only for the statement and its commit: a transaction of four statements
 * held it across four round trips, and with eight attempts of one endpoint in flight those records,
 * one at a time, were what bounded its deliveries under a burst. The endpoint is locked before the
 * message, in the order its removal locks them. False when the endpoint or the message is gone:
 * nothing is recorded.
 */
export async function recordDelivered(db: EventsDb, message: ClaimedMessage, outcome: AttemptOutcome): Promise<boolean> {
  const result = await sql<{ recorded: boolean }>`
    with endpoint as (
      select id, failing_since from events.webhook_endpoints
      where account_id = ${message.account_id} and id = ${message.endpoint_id}
      for no key update
    ), attempt as (
      ${insertAttemptWhileMessageExists(message, outcome, sql`exists (select from endpoint)`)}
      returning id
    ), settled as (
      -- Or marked failed, unclaimed, by a claim that took this slow claimer for dead at the end of the
      -- message's 3 days (claimDueMessages): the receiver's 2xx says it was delivered all the same.
      update events.webhook_messages set state = 'DELIVERED', claim_token = null
      where account_id = ${message.account_id} and id = ${message.id}
        and (claim_token = ${message.claim_token} or (state = 'FAILED' and claim_token is null))
    ), streak_ended as (
      update events.webhook_endpoints e set failing_since = null, updated_at = ${outcome.attemptedAt}
      from endpoint
      where e.account_id = ${message.account_id} and e.id = endpoint.id and endpoint.failing_since is not null
    )
    select exists (select from attempt) as recorded`.execute(db);
  return result.rows[0]!.recorded;
}

/**
 * Sets the message's state after an attempt, only if this claimer still holds it. An `interrupted`
 * attempt (our own stop) gives back the count its claim took: the retry schedule's step follows the
 * receiver's failures, and a rolling deploy would otherwise push the next retry from 5 s to 5 min.
 */
export async function settleMessage(
  trx: EventsDb,
  message: ClaimedMessage,
  next: { state: MessageState; nextAttemptAt?: Date; interrupted?: boolean },
): Promise<void> {
  await trx
    .updateTable('webhook_messages')
    .set((eb) => ({
      state: next.state,
      claim_token: null,
      ...(next.nextAttemptAt ? { next_attempt_at: next.nextAttemptAt } : {}),
      ...(next.interrupted ? { attempts: eb('attempts', '-', 1) } : {}),
    }))
    .where('account_id', '=', message.account_id)
    .where('id', '=', message.id)
    .where('claim_token', '=', message.claim_token)
    .execute();
}

/** An endpoint's attempts, newest first, keyset-paged. */
export async function listAttempts(
  db: EventsDb,
  accountId: string,
  endpointId: Uuid,
  after: KeysetPosition | undefined,
  limit: number,
): Promise<AttemptRow[]> {
  const select = db.selectFrom('webhook_attempts').selectAll().where('account_id', '=', accountId).where('endpoint_id', '=', endpointId);
  return inKeysetOrder(select, { time: 'attempted_at', after, limit }).execute();
}
