import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { deleteExpiredEvents } from '../src/dispatcher.ts';
import { RETENTION_MS } from '../src/domain.ts';
import { createEndpoint } from '../src/operations.ts';
import type { EventsContext } from '../src/context.ts';
import { readFeed, streamFeed } from '../src/feed.ts';
import { findEventsByIds, ingestEvents, type EventsDb, type IncomingEvent } from '../src/repository.ts';
import { ingest, strategyEvent, secretKey, useEventsDatabase } from './support/fixtures.ts';
import type { EventFeedAnswer } from '@ots/shared/event-feed';
import { newId } from '@ots/shared/ids';
import { SealedFeedCursors } from '@ots/shared/sealed-cursors';
import { testScope } from '@ots/shared/testing/scope';

const { db } = await useEventsDatabase();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cursors = new SealedFeedCursors(randomBytes(32), { feed: 'events:test', keyInfo: 'test' });

/** listEvents' read, as the resolver makes it. */
const listPage = (accountId: string, after: string | null, options: { types?: string[]; size?: number; handle?: EventsDb } = {}) =>
  readFeed(options.handle ?? db, cursors, { accountId, after, start: 'oldest', types: options.types, occurredAfter: undefined, size: options.size ?? 50 });

describe('the feed', () => {
  it('misses nothing and repeats nothing while concurrent writers commit out of order, some slowly', async () => {
    const accountId = randomUUID();
    const committed = new Set<string>();
    let writing = true;

    // Each writer's events get their ids (time-ordered) before a transaction that may take a while
    // to commit: an id- or time-ordered reader would page past them.
    const writer = async (slowEvery: number) => {
      for (let round = 0; round < 25; round += 1) {
        const events = Array.from({ length: 1 + (round % 3) }, () => strategyEvent(accountId, new Date()));
        await db.transaction().execute(async (trx) => {
          await ingestEvents(trx, JSON.stringify({ events }), new Date());
          await sleep(round % slowEvery === 0 ? 120 : Math.random() * 10);
        });
        for (const event of events) committed.add(event.id);
      }
    };

    const seen: string[] = [];
    // Pages forward from its last cursor until it has seen every committed event: a row held back
    // (by a transaction still running anywhere on the server) must show up later, ahead of the cursor.
    const reader = async () => {
      let after: string | null = null;
      const deadline = Date.now() + 20_000;
      while ((writing || new Set(seen).size < committed.size) && Date.now() < deadline) {
        const page = await listPage(accountId, after, { size: 7 });
        seen.push(...page.edges.map((edge) => edge.node.id));
        after = page.endCursor;
        await sleep(3);
      }
    };

    const reading = reader();
    await Promise.all([writer(4), writer(5), writer(7), writer(3)]);
    writing = false;
    await reading;

    expect(committed.size).toBeGreaterThan(150);
    expect(new Set(seen).size).toBe(seen.length);
    expect(new Set(seen)).toEqual(committed);
  });

  it('scopes every page to the account', async () => {
    const a = randomUUID();
    const b = randomUUID();
    await ingest(db, [strategyEvent(a, new Date()), strategyEvent(b, new Date())], new Date());
    const deadline = Date.now() + 30_000;
    let pageA = await listPage(a, null);
    // The rows appear once every transaction older than theirs, anywhere on the server, has ended.
    while (pageA.edges.length === 0 && Date.now() < deadline) {
      await sleep(20);
      pageA = await listPage(a, null);
    }
    expect(pageA.edges.map((edge) => edge.node.account_id)).toEqual([a]);
  });
});

/** A stream's read of the feed, as the gateway asks it through the events route. */
function streamRead(accountId: string, after: string | null, types: string[] | null, handle: EventsDb = db): Promise<EventFeedAnswer> {
  const context = { caller: { accountId }, db: handle, cursors } as unknown as EventsContext;
  return streamFeed({ after, types, occurredAfter: null, limit: 200, countUpTo: 0 }, context);
}

function answered(answer: EventFeedAnswer) {
  if ('error' in answer) throw new Error(answer.error.message);
  return answer;
}

/**
 * Runs a read in a transaction of its own and counts the rows of `events.events` it went over (index
 * and heap alike): the backend's counters not yet reported, which grow only between its transactions.
 */
async function rowsReadBy<T>(read: (handle: EventsDb) => Promise<T>): Promise<{ result: T; rowsRead: number }> {
  const counted = async (trx: EventsDb) => {
    const { rows } = await sql<{ read: string }>`
      select (pg_stat_get_xact_tuples_fetched('events.events'::regclass) + pg_stat_get_xact_tuples_returned('events.events'::regclass))::text as read`.execute(trx);
    return Number(rows[0]!.read);
  };
  return db.transaction().execute(async (trx) => {
    const before = await counted(trx);
    const result = await read(trx);
    return { result, rowsRead: (await counted(trx)) - before };
  });
}

const archived = (accountId: string): IncomingEvent => ({ id: newId(), accountId, type: 'strategy.archived', occurredAt: new Date(), data: { id: newId() } });
const created = (accountId: string, count: number): IncomingEvent[] => Array.from({ length: count }, () => strategyEvent(accountId, new Date()));

/** Follows a stream's answers while they say more lies ahead or the horizon still holds the rows back; returns the last. */
async function streamCaughtUp(accountId: string, after: string, types: string[], until: (answer: ReturnType<typeof answered>) => boolean) {
  const deadline = Date.now() + 30_000;
  let answer = answered(await streamRead(accountId, after, types));
  const items = [...answer.items];
  while (!until(answer) && Date.now() < deadline) {
    if (!answer.hasMore) await sleep(20);
    answer = answered(await streamRead(accountId, answer.endCursor, types));
    items.push(...answer.items);
  }
  return { answer, items };
}

describe('a filtered read', () => {
  it('of a stream moves past the events that do not match, so a later read goes over the new rows only', async () => {
    const accountId = randomUUID();
    const types = ['strategy.archived'];
    const start = answered(await streamRead(accountId, null, types)).endCursor;
    await ingest(db, created(accountId, 3_000), new Date());
    // Past every one of them (they show once every older transaction on the server has ended).
    const caughtUp = await streamCaughtUp(accountId, start, types, (answer) => answer.endCursor !== start && !answer.hasMore);
    expect(caughtUp.items).toEqual([]);
    const passed = caughtUp.answer.endCursor;
    expect(passed).not.toBe(start);

    const wanted = archived(accountId);
    await ingest(db, [...created(accountId, 5), wanted], new Date());
    const next = await streamCaughtUp(accountId, passed, types, (answer) => answer.items.length > 0);
    expect(next.items.map((item) => item.event.id)).toEqual([wanted.id]);
    // A read from there goes over the six new rows, not the 3,000 before them.
    const { result, rowsRead } = await rowsReadBy((handle) => streamRead(accountId, passed, types, handle));
    expect(answered(result).items.map((item) => item.event.id)).toEqual([wanted.id]);
    expect(rowsRead).toBeLessThan(100);
  });

  it('of listEvents finds a match past thousands that do not, and an empty page keeps the place it was asked from', async () => {
    const accountId = randomUUID();
    const types = ['strategy.archived'];
    const first = archived(accountId);
    await ingest(db, [first], new Date());
    let page = await listPage(accountId, null, { types });
    for (const deadline = Date.now() + 30_000; page.edges.length === 0 && Date.now() < deadline; ) page = await listPage(accountId, null, { types });
    expect(page.edges.map((edge) => edge.node.id)).toEqual([first.id]);

    await ingest(db, created(accountId, 5_000), new Date());
    const last = archived(accountId);
    await ingest(db, [last], new Date());
    const after = page.endCursor;
    let next = await listPage(accountId, after, { types });
    // Each page either finds it or, empty, answers the place it was asked from.
    for (const deadline = Date.now() + 30_000; next.edges.length === 0 && Date.now() < deadline; ) {
      expect(next.endCursor).toBe(after);
      expect(next.hasNextPage).toBe(false);
      next = await listPage(accountId, after, { types });
    }
    expect(next.edges.map((edge) => edge.node.id)).toEqual([last.id]);
    const caughtUp = await listPage(accountId, next.endCursor, { types });
    expect(caughtUp.edges).toEqual([]);
    expect(caughtUp.endCursor).toBe(next.endCursor);
  });

  it('of listEvents by type reads the matching events only, however many others lie between, in one page', async () => {
    const accountId = randomUUID();
    const types = ['strategy.archived', 'strategy.paused'];
    const first = archived(accountId);
    await ingest(db, [first], new Date());
    await ingest(db, created(accountId, 5_000), new Date());
    const paused: IncomingEvent = { ...archived(accountId), type: 'strategy.paused' };
    const last = archived(accountId);
    await ingest(db, [paused, ...created(accountId, 10), last], new Date());
    let all = await listPage(accountId, null, { types });
    for (const deadline = Date.now() + 30_000; all.edges.length < 3 && Date.now() < deadline; ) all = await listPage(accountId, null, { types });
    expect(all.edges.map((edge) => edge.node.id)).toEqual([first.id, paused.id, last.id]);
    const page = await listPage(accountId, null, { types, size: 1 });
    expect(page).toMatchObject({ edges: [{ node: { id: first.id } }], hasNextPage: true });

    // The next page, past the 5,000 others: its two events and nothing of what lies between.
    const { result, rowsRead } = await rowsReadBy((handle) => listPage(accountId, page.endCursor, { types, size: 2, handle }));
    expect(result.edges.map((edge) => edge.node.id)).toEqual([paused.id, last.id]);
    expect(result.hasNextPage).toBe(false);
    expect(rowsRead).toBeLessThan(20);
    // Caught up: empty, at the place it was asked from.
    const caughtUp = await listPage(accountId, result.endCursor, { types });
    expect(caughtUp).toMatchObject({ edges: [], hasNextPage: false, endCursor: result.endCursor });
  });

  it('of listEvents with no types answers the feed\'s end, or the place it was asked from, without going over the feed', async () => {
    const accountId = randomUUID();
    await ingest(db, created(accountId, 3_000), new Date());
    let all = await listPage(accountId, null, { size: 200 });
    for (const deadline = Date.now() + 30_000; all.edges.length === 0 && Date.now() < deadline; ) all = await listPage(accountId, null, { size: 200 });
    expect(all.edges.length).toBeGreaterThan(0);

    const { result: end, rowsRead } = await rowsReadBy((handle) => listPage(accountId, null, { types: [], handle }));
    expect(rowsRead).toBe(0);
    expect(end.edges).toEqual([]);
    // The end: nothing of these 3,000 lies ahead of it, and what is written next does.
    expect((await listPage(accountId, end.endCursor)).edges).toEqual([]);
    const next = archived(accountId);
    await ingest(db, [next], new Date());
    let after = await listPage(accountId, end.endCursor);
    for (const deadline = Date.now() + 30_000; after.edges.length === 0 && Date.now() < deadline; ) after = await listPage(accountId, end.endCursor);
    expect(after.edges.map((edge) => edge.node.id)).toEqual([next.id]);

    const fromPlace = await rowsReadBy((handle) => listPage(accountId, all.endCursor, { types: [], handle }));
    expect(fromPlace.rowsRead).toBe(0);
    expect(fromPlace.result).toEqual({ edges: [], hasNextPage: false, endCursor: all.endCursor });
  });

  it('still gets an event that commits late behind rows the horizon held back, after moving past those that did not match', async () => {
    const accountId = randomUUID();
    const types = ['strategy.archived'];
    const start = answered(await streamRead(accountId, null, types)).endCursor;
    await ingest(db, created(accountId, 3), new Date());
    const pastEarlier = await streamCaughtUp(accountId, start, types, (answer) => answer.endCursor !== start && !answer.hasMore);
    const position = pastEarlier.answer.endCursor;
    expect(position).not.toBe(start);

    const late = archived(accountId);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let written!: () => void;
    const writing = new Promise<void>((resolve) => (written = resolve));
    const slow = db.transaction().execute(async (trx) => {
      await ingestEvents(trx, JSON.stringify({ events: [late] }), new Date());
      written();
      await held;
    });
    await writing;
    // Committed after the slow one began: held back until it ends, and not what the stream asks for.
    await ingest(db, created(accountId, 4), new Date());
    for (let look = 0; look < 5; look += 1) {
      const answer = answered(await streamRead(accountId, position, types));
      expect(answer.items).toEqual([]);
      expect(answer.endCursor).toBe(position);
      await sleep(10);
    }
    release();
    await slow;
    const after = await streamCaughtUp(accountId, position, types, (answer) => answer.items.length > 0);
    expect(after.items.map((item) => item.event.id)).toEqual([late.id]);
  });
});

describe('retention', () => {
  it('the clean-up deletes events older than 30 days with their deliveries, and keeps the rest', async () => {
    const accountId = randomUUID();
    const now = new Date();
    const created = await createEndpoint({ ...testScope(db, accountId), production: false, now: () => now, secretKey }, { url: 'https://example.com/hooks' });
    expect(created.ok).toBe(true);
    const old = strategyEvent(accountId, new Date(now.getTime() - RETENTION_MS - 60_000));
    const recent = strategyEvent(accountId, new Date(now.getTime() - RETENTION_MS + 60_000));
    await ingest(db, [old, recent], now);
    // Not shown even before the clean-up has run.
    expect((await findEventsByIds(db, accountId, [old.id, recent.id])).map((row) => row.id)).toEqual([recent.id]);
    expect(await deleteExpiredEvents(db, now)).toBeGreaterThanOrEqual(1);
    const left = await db.selectFrom('events').select('id').where('account_id', '=', accountId).execute();
    expect(left.map((row) => row.id)).toEqual([recent.id]);
    const messages = await db.selectFrom('webhook_messages').select('event_id').where('account_id', '=', accountId).execute();
    expect(messages.map((row) => row.event_id)).toEqual([recent.id]);
    // Nothing to do on a second run.
    expect(await deleteExpiredEvents(db, now)).toBe(0);
  });
});
