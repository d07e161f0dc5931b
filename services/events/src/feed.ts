import { feedEndAt, positionOf, readFeedHorizon } from '@ots/shared/commit-order';
import { GraphQLError } from 'graphql';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import { badUserInput } from '@ots/shared/errors';
import type { EventFeedAnswer, eventFeedRoute } from '@ots/shared/event-feed';
import type { EventsContext } from './context.ts';
import type { SealedFeedCursors } from '@ots/shared/sealed-cursors';
import { countEventsAfter, hasEventsAfter, listEvents, listEventsAhead, type EventRow, type EventsDb } from './repository.ts';
import { eventTypesOf } from './domain.ts';

/**
 * The feed as `listEvents` and the gateway's streams read it: oldest first in commit order, from a
 * cursor, and always with a place to continue from. A forward feed keeps its place (contract
 * section 4): an empty page answers the position it was asked from, or, asked from nowhere, the
 * feed's current end, so a client that always stores `endCursor` never re-reads from the start.
 */

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

export async function readFeed(db: EventsDb, cursors: SealedFeedCursors, request: FeedRequest): Promise<FeedPage> {
  const after = cursors.decode(request.accountId, request.after);
  const query = { types: request.types, occurredAfter: request.occurredAfter, limit: request.size + 1 };
  if (after) return page(await listEvents(db, request.accountId, { ...query, after }), request, cursors, request.after!);
  // From nowhere, the page is bounded by a horizon read first: if it finds nothing (or the stream
  // starts now), that horizon is a position behind which nothing matching can ever appear.
  const horizon = await readFeedHorizon(db as unknown as Kysely<unknown>);
  const end = cursors.encode(request.accountId, feedEndAt(horizon));
  if (request.start === 'now') return { edges: [], hasNextPage: false, endCursor: end };
  return page(await listEvents(db, request.accountId, { ...query, after: undefined, horizon }), request, cursors, end);
}

function page(rows: readonly EventRow[], request: FeedRequest, cursors: SealedFeedCursors, whenEmpty: string): FeedPage {
  const edges = rows.slice(0, request.size).map((node) => ({ cursor: cursors.encode(request.accountId, positionOf(node)), node }));
  return { edges, hasNextPage: rows.length > request.size, endCursor: edges.at(-1)?.cursor ?? whenEmpty };
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
    const occurredAfter = input.occurredAfter === null ? undefined : parseOccurredAfter(input.occurredAfter);
    if (input.limit === 0) {
      const after = context.cursors.decode(accountId, input.after);
      const beyond = after ? await countEventsAfter(context.db, accountId, { types, occurredAfter, after, limit: input.countUpTo }) : 0;
      return { items: [], endCursor: input.after ?? '', hasMore: beyond > 0, heldBack: false, beyond };
    }
    const after = context.cursors.decode(accountId, input.after);
    if (!after) {
      const start = await readFeed(context.db, context.cursors, { accountId, after: undefined, start: 'now', types, occurredAfter, size: input.limit });
      // Asked after the horizon was read: anything committed since then wakes the stream anyway (its ingest notifies).
      const heldBack = await hasEventsAfter(context.db, accountId, { types, occurredAfter, after: context.cursors.decode(accountId, start.endCursor)! });
      return { items: [], endCursor: start.endCursor, hasMore: false, heldBack, beyond: null };
    }
    const rows = await listEventsAhead(context.db, accountId, { types, occurredAfter, after, limit: input.limit + 1 });
    const ready = rows.filter((row) => !row.held_back);
    const items = ready.slice(0, input.limit).map((node) => ({
      cursor: context.cursors.encode(accountId, positionOf(node)),
      event: { id: node.id, type: node.type, occurredAt: node.occurred_at.toISOString(), data: node.data as Record<string, unknown> },
    }));
    return {
      items,
      endCursor: items.at(-1)?.cursor ?? input.after!,
      hasMore: ready.length > input.limit,
      heldBack: ready.length < rows.length,
      beyond: null,
    };
  } catch (error) {
    if (error instanceof GraphQLError && error.extensions.code === 'BAD_USER_INPUT') {
      return { error: { code: 'BAD_USER_INPUT', message: error.message } };
    }
    throw error;
  }
}

function parseOccurredAfter(value: string): Date {
  const parsed = new Date(value);
  if (Number.isNaN(parsed.getTime())) throw badUserInput('filter.occurredAfter must be an ISO-8601 instant', 'filter');
  return parsed;
}
