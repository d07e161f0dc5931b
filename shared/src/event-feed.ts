import { z } from 'zod';
import { isEventType } from './contracts/events.ts';
import { badUserInput } from './errors.ts';
import type { SubgraphRouteContract } from './subgraph-route.ts';

/**
 * How the gateway's event streams read the events subgraph's feed (contract section 6, push side):
 * the feed is the source of truth, read through this route on the caller's behalf; a wake-up on
 * `EVENTS_WAKE_CHANNEL` only says "look again", so a lost one delays and never loses.
 */

/** Postgres NOTIFY channel: the events service notifies it when an ingest commits, with the accounts it concerns. */
export const EVENTS_WAKE_CHANNEL = 'ots_events_committed';

/** The payload when the accounts do not fit in one notification (8,000 bytes): every stream looks again. */
export const WAKE_EVERYONE = '*';

/** Longer than any cursor the feed issues. */
export const MAX_FEED_CURSOR_LENGTH = 200;

const feedInput = z.object({
  /** A cursor of this account's feed (listEvents or a stream item); null: from the feed's end now. */
  after: z.string().max(MAX_FEED_CURSOR_LENGTH).nullable(),
  types: z.array(z.string()).max(20).nullable(),
  occurredAfter: z.string().max(40).nullable(),
  /** Events to read; 0 asks only how many lie beyond `after`, counted up to `countUpTo`. */
  limit: z.number().int().min(0).max(500),
  countUpTo: z.number().int().min(0).max(10_000).default(0),
});

const feedEvent = z.object({ id: z.string(), type: z.string(), occurredAt: z.string(), data: z.record(z.string(), z.unknown()) });

const feedAnswer = z.union([
  z.object({
    items: z.array(z.object({ cursor: z.string(), event: feedEvent })),
    /** Where to read on from: the last item's cursor, or where the read started (never null). */
    endCursor: z.string(),
    hasMore: z.boolean(),
    /**
     * Events lie beyond `endCursor` that the feed cannot hand out yet: transactions begun before
     * theirs are still open (shared/src/commit-order.ts). They show up when those end, which nothing
     * announces, so the stream looks again soon. Absent from an events service that predates it,
     * which is taken as "maybe": during a rolling upgrade a stream looks again as it always did
     * after a wake-up, rather than waiting for its idle look.
     */
    heldBack: z.boolean().default(true),
    /** Events beyond `after` when `countUpTo` was asked, at most `countUpTo`. */
    beyond: z.number().int().nullable(),
  }),
  /** A cursor or filter the feed refuses: the client's mistake, answered as a GraphQL error. */
  z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
]);

export const eventFeedRoute = {
  path: '/internal/event-feed',
  input: feedInput,
  answer: feedAnswer,
  // The scope of `Subscription.events`, whose streams read the feed through this route.
  requiredScopes: [['read']],
} satisfies SubgraphRouteContract;

export type EventFeedInput = z.input<typeof feedInput>;
export type EventFeedAnswer = z.output<typeof feedAnswer>;
export type FeedEvent = z.output<typeof feedEvent>;

/**
 * A type filter of known event types, as `listEvents` and the `events` subscription take it; an
 * unknown name is a BAD_USER_INPUT rather than an empty feed.
 */
export function eventTypesOf(types: readonly string[] | null | undefined): readonly string[] | undefined {
  const unknown = types?.find((type) => !isEventType(type));
  if (unknown !== undefined) throw badUserInput(`filter.types holds an unknown event type: ${JSON.stringify(unknown)}`, 'filter');
  return types ?? undefined;
}
