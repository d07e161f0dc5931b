import { feedEndAt, positionOf, readFeedHorizon, type FeedPosition } from '@ots/shared/commit-order';
import { GraphQLError } from 'graphql';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import { parseDateTime } from '@ots/shared/scalars';
import { eventTypesOf, type EventFeedAnswer, type eventFeedRoute } from '@ots/shared/event-feed';
import type { EventsContext } from './context.ts';
import type { SealedFeedCursors } from '@ots/shared/sealed-cursors';
import { countEventsAfter, scanEvents, seekEventsOfTypes, type EventFilter, type EventRow, type EventsDb, type ScannedEvent } from './repository.ts';

/**
 * The feed as `listEvents` and the gateway's streams read it: oldest first in commit order, from a
 * cursor, and always with a place to continue from. A forward feed keeps its place (contract
 * section 4): an empty page answers the position it was asked from, or, asked from nowhere, the
 * feed's current end, so a client that always stores `endCursor` never re-reads from the start.
 *
 * A `listEvents` page filtered by types (and not by time) seeks each type's events through an index
 * (`seekEventsOfTypes`). Any other filtered read goes over the account's rows of every type, a
 * bounded number of them at a time (`scanEvents`). A stream's read ends at the last row it went
 * over, matching or not, so a stream with a sparse filter moves on past the rows that did not match
 * instead of reading them again on every wake-up; that place is a row's like any other, never past a
 * row the horizon holds back, so an event committed late still shows up ahead of it.
 */

/** Rows a filtered read goes over at most (an unfiltered one reads what it returns, plus one). */
const FILTERED_SCAN_ROWS = 2_000;

export interface FeedRequest {
  accountId: string;
  /** A cursor this account was given; absent: from `start`. */
  after: string | null | undefined;
  /** Where a request without `after` starts: the oldest kept event (`listEvents`) or now (a stream). */
  start: 'oldest' | 'now';
  types: readonly string[] | undefined;
  occurredAfter: Date | undefined;
  size: number;
}

export interface FeedPage {
  edges: { cursor: string; node: EventRow }[];
  hasNextPage: boolean;
  endCursor: string;
}

function scanLimitFor(filter: EventFilter, wanted: number): number {
  return filter.types === undefined && filter.occurredAfter === undefined ? wanted : Math.max(wanted, FILTERED_SCAN_ROWS);
}

/** A scan read as a page of at most `size` events: where it ends, and whether more lies ahead. */
interface ScanPage {
  events: EventRow[];
  /** The last event given, or past it the last row gone over that the feed may hand out; undefined when there is neither. */
  end: FeedPosition | undefined;
  /** Rows lie ahead that the feed may hand out now: the page is full, or the scan stopped at its bound. */
  hasMore: boolean;
  /** A matching row lies ahead that the horizon holds back (or may: the scan stopped among held-back rows). */
  heldBack: boolean;
  /** Nothing lies between the end and the horizon: every row the scan could reach was gone over. */
  reachedHorizon: boolean;
}

function pageOfScan(rows: readonly ScannedEvent[], size: number, scanLimit: number): ScanPage {
  // Held-back rows sort after every row the feed may hand out (commit-order.ts).
  const ready = rows.filter((row) => !row.heldBack);
  const matching = ready.filter((row) => row.matches);
  const cutShort = rows.length === scanLimit;
  if (matching.length > size) {
    const events = matching.slice(0, size).map((row) => row.event!);
    return { events, end: matching[size - 1]!.position, hasMore: true, heldBack: false, reachedHorizon: false };
  }
  return {
    events: matching.map((row) => row.event!),
    end: ready.at(-1)?.position,
    hasMore: cutShort && ready.length === rows.length,
    heldBack: rows.some((row) => row.heldBack && row.matches) || (cutShort && ready.length < rows.length),
    reachedHorizon: !cutShort,
  };
}

export async function readFeed(db: EventsDb, cursors: SealedFeedCursors, request: FeedRequest): Promise<FeedPage> {
  const after = cursors.decode(request.accountId, request.after);
  const scanLimit = scanLimitFor(request, request.size + 1);
  const scan = { types: request.types, occurredAfter: request.occurredAfter, scanLimit, matchLimit: request.size };
  // From nowhere, the page is bounded by a horizon read first: if it finds nothing (or the stream
  // starts now), that horizon is a position behind which nothing matching can ever appear.
  const horizon = after ? undefined : await readFeedHorizon(db as unknown as Kysely<unknown>);
  const asked = after ? request.after! : cursors.encode(request.accountId, feedEndAt(horizon!));
  // A filter of no types matches no event: its answer is the empty page, without going over the
  // account's feed (the client SDK asks so for the feed's end, where a stream starts from now).
  if ((!after && request.start === 'now') || request.types?.length === 0) return { edges: [], hasNextPage: false, endCursor: asked };
  if (request.types && !request.occurredAfter) {
    // Each type's events are sought where they are (an index per account and type, in commit order):
    // a page costs what the first did however few events the filter matches (section 4), and an
    // empty one still answers the position it was asked from. (With `occurredAfter` too, the index
    // cannot tell which of a type's events are recent: one statement would go over every older one,
    // so that filter keeps the bounded scans below.)
    const rows = await seekEventsOfTypes(db, request.accountId, { types: request.types, after, horizon, limit: request.size + 1 });
    const events = rows.slice(0, request.size);
    const end = events.at(-1);
    return {
      edges: events.map((node) => ({ cursor: cursors.encode(request.accountId, positionOf(node)), node })),
      hasNextPage: rows.length > request.size,
      endCursor: end ? cursors.encode(request.accountId, positionOf(end)) : asked,
    };
  }
  // An empty page answers the position it was asked from (contract section 4), so a page filtered by
  // `occurredAfter` does not stop at a bound of rows that do not match: it goes on over them, a
  // bounded scan at a time, until it finds what matches or has nothing more to go over. (The streams'
  // route, whose places no client sees, moves on past them instead: `streamFeed`.)
  let from = after;
  for (;;) {
    const page = pageOfScan(await scanEvents(db, request.accountId, { ...scan, after: from, horizon }), request.size, scanLimit);
    if (page.events.length > 0) return pageFrom(page, request, cursors, asked);
    if (!page.hasMore || !page.end) return { edges: [], hasNextPage: false, endCursor: asked };
    from = page.end;
  }
}

function pageFrom(page: ScanPage, request: FeedRequest, cursors: SealedFeedCursors, whenNowhere: string): FeedPage {
  const edges = page.events.map((node) => ({ cursor: cursors.encode(request.accountId, positionOf(node)), node }));
  return { edges, hasNextPage: page.hasMore, endCursor: page.end ? cursors.encode(request.accountId, page.end) : whenNowhere };
}

/**
 * The gateway's streams read the feed through this route (shared/src/event-feed.ts): the same page
 * as `listEvents`, from now when no cursor is given; whether events lie ahead that the horizon holds
 * back (the stream looks again soon: nothing announces the moment they show); and, for a stream whose
 * consumer lags, how many events lie beyond what it delivered.
 */
export async function streamFeed(input: z.output<typeof eventFeedRoute.input>, context: EventsContext): Promise<EventFeedAnswer> {
  const accountId = context.caller.accountId;
  try {
    const types = eventTypesOf(input.types);
    // The DateTime scalar's own rules, as listEvents applies them.
    const occurredAfter = input.occurredAfter === null ? undefined : parseDateTime(input.occurredAfter);
    const filter = { types, occurredAfter };
    if (input.limit === 0) {
      const after = context.cursors.decode(accountId, input.after);
      const beyond = after ? await countEventsAfter(context.db, accountId, { ...filter, after, countUpTo: input.countUpTo, scanLimit: scanLimitFor(filter, input.countUpTo) }) : 0;
      return { items: [], endCursor: input.after ?? '', hasMore: beyond > 0, heldBack: false, beyond };
    }
    const after = context.cursors.decode(accountId, input.after);
    if (!after) {
      const start = await readFeed(context.db, context.cursors, { accountId, after: undefined, start: 'now', ...filter, size: input.limit });
      // Asked after the horizon was read: anything committed since then wakes the stream anyway (its ingest notifies).
      const scanLimit = scanLimitFor(filter, 1);
      const beyondStart = await scanEvents(context.db, accountId, {
        ...filter,
        after: context.cursors.decode(accountId, start.endCursor),
        horizon: 'ahead',
        scanLimit,
        matchLimit: 0,
      });
      const heldBack = beyondStart.some((row) => row.matches) || beyondStart.length === scanLimit;
      return { items: [], endCursor: start.endCursor, hasMore: false, heldBack, beyond: null };
    }
    const scanLimit = scanLimitFor(filter, input.limit + 1);
    const page = pageOfScan(await scanEvents(context.db, accountId, { ...filter, after, horizon: 'ahead', scanLimit, matchLimit: input.limit }), input.limit, scanLimit);
    const items = page.events.map((node) => ({
      cursor: context.cursors.encode(accountId, positionOf(node)),
      event: { id: node.id, type: node.type, occurredAt: node.occurred_at.toISOString(), data: node.data as Record<string, unknown> },
    }));
    return {
      items,
      endCursor: page.end ? context.cursors.encode(accountId, page.end) : input.after!,
      hasMore: page.hasMore,
      heldBack: page.heldBack,
      beyond: null,
    };
  } catch (error) {
    if (error instanceof GraphQLError && error.extensions.code === 'BAD_USER_INPUT') {
      return { error: { code: 'BAD_USER_INPUT', message: error.message } };
    }
    throw error;
  }
}

