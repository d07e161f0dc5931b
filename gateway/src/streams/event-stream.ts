import { GraphQLError } from 'graphql';
import type { EventFeedAnswer, EventFeedInput, FeedEvent } from '@ots/shared/event-feed';

/**
 * One `events` subscription (contract section 6, push side). The events subgraph's feed is the
 * source of truth: the stream reads it forward from its cursor, in commit order, so replaying what
 * is committed and going live are the same loop, with no gap and no repeat at the switch, and an
 * event that a slow transaction commits late shows up ahead of the cursor when it commits.
 * Wake-ups only say "look again"; without one the stream still looks every few seconds, so a lost
 * wake-up delays and never loses.
 */

/** What a stream reads at a time. */
const PAGE_SIZE = 200;
/**
 * Looks while the feed holds events back behind transactions still open (commit-order.ts): they
 * show up as soon as those end, which no wake-up announces, usually within a write's transaction or
 * two. Soon at first, for the stream's latency, then less often while a long transaction holds them.
 */
const HELD_BACK_LOOK_MS = [5, 5, 10, 10, 10, 10, 20, 20, 50, 100, 250];
/** Idle streams cost a feed read each per look; wake-ups come on every commit, and every stream looks again when the listener reconnects. */
const IDLE_LOOK_MS = 15_000;
/** While the consumer does not take what is sent: how often to wait for room, and to count how far behind it is. */
const ROOM_WAIT_MS = 20;
const BEHIND_CHECK_MS = 1_000;
/** How far a backlog is counted: enough to tell whether it shrinks. */
const MAX_BACKLOG_COUNT = 10_000;
/** A feed that does not answer for this long ends the stream, so that the client resumes elsewhere instead of waiting on a silent stream. */
const FEED_OUTAGE_MS = 5_000;

interface StreamLimits {
  /** A consumer more than this many events behind is ended with SLOW_CONSUMER. */
  maxBehind: number;
}

/**
 * `perKey` open streams per key (contract section 6); `socketsPerKey` WebSocket connections per key on
 * each gateway, streams or not, so that one key's idle sockets cannot fill the connection cap.
 */
export const DEFAULT_STREAM_LIMITS = { maxBehind: 1_000, perKey: 10, socketsPerKey: 20, heartbeatMs: 8_000 };

interface StreamItem {
  cursor: string;
  event: FeedEvent;
}

/** The last message of a stream that ends with an error the client must see. */
export interface StreamEnd {
  end: GraphQLError;
}

export type StreamMessage = StreamItem | StreamEnd;

/** Why a stream ends before its consumer is done with it: its key, its account, the process stopping, or the client leaving. */
export type EndReason = 'key-invalid' | 'access-disabled' | 'read-revoked' | 'shutdown' | 'client-gone';

export interface EventStreamOptions {
  accountId: string;
  /** Where to start: a cursor of the account's feed, or null for now. */
  after: string | null;
  filter: { types: string[] | null; occurredAfter: string | null };
  readFeed(input: EventFeedInput): Promise<EventFeedAnswer>;
  subscribeWakeups(accountId: string, wake: () => void): () => void;
  limits: StreamLimits;
  /** Whether the transport can take another message now (its buffers are below their marks). */
  hasRoom(): boolean;
  /** Called once when the stream is ended from outside, so that the transport closes what it must. */
  onEnd?(reason: EndReason): void;
  /** Called once when the stream has stopped, however it ended. */
  onClosed?(): void;
}

function slowConsumer(cursor: string | null): GraphQLError {
  return new GraphQLError('The consumer fell more than 1,000 events behind; resume from extensions.cursor', {
    extensions: { code: 'SLOW_CONSUMER', cursor },
  });
}

export class EventStream {
  /** Cursors of messages handed to the transport and not yet written, oldest first (null for an end). */
  private readonly pending: (string | null)[] = [];
  private delivered: string | null;
  private lastYielded: string | null;
  private woken = false;
  private roomWaiter: (() => void) | undefined;
  private lastBehindCheck = Date.now();
  /** Events beyond what the consumer was sent, at the last count. */
  private lastBacklog: number | undefined;
  private closed = false;
  private wakeWaiter: (() => void) | undefined;
  private readonly ending = new AbortController();
  endReason: EndReason | undefined;

  constructor(private readonly options: EventStreamOptions) {
    this.delivered = options.after;
    this.lastYielded = options.after;
  }

  /** How many messages the transport holds unwritten. */
  get unwritten(): number {
    return this.pending.length;
  }

  /** The transport wrote the next message: returns its cursor (null for an end), for the SSE id. */
  written(): string | null {
    const cursor = this.pending.shift() ?? null;
    if (cursor !== null) this.delivered = cursor;
    this.roomMaybe();
    return cursor;
  }

  /** The transport may have room again (its socket drained): a stream waiting for room looks at once. */
  roomMaybe(): void {
    this.roomWaiter?.();
  }

  /** Ends the stream from outside (revocation, shutdown); the transport closes what it must. */
  end(reason: EndReason): void {
    if (this.endReason) return;
    this.endReason = reason;
    this.ending.abort();
    this.wake();
    this.options.onEnd?.(reason);
  }

  get ended(): boolean {
    return this.ending.signal.aborted;
  }

  private wake(): void {
    this.woken = true;
    this.wakeWaiter?.();
  }

  /** Resolves true on a wake-up (or one that came since the last wait) or the stream's end, false after `ms`. */
  private waitForWake(ms: number): Promise<boolean> {
    if (this.woken || this.ended) {
      this.woken = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.wakeWaiter = undefined;
        this.woken = false;
        resolve(woken);
      };
      const timer = setTimeout(() => done(false), ms);
      this.wakeWaiter = () => done(true);
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.ended) return resolve();
      const timer = setTimeout(() => {
        this.ending.signal.removeEventListener('abort', stop);
        resolve();
      }, ms);
      const stop = () => {
        clearTimeout(timer);
        resolve();
      };
      this.ending.signal.addEventListener('abort', stop, { once: true });
    });
  }

  /** Resolves when the transport says it may have room, the stream ends, or after ROOM_WAIT_MS (a transport that cannot say). */
  private roomOrTimeout(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.ending.signal.removeEventListener('abort', done);
        this.roomWaiter = undefined;
        resolve();
      };
      const timer = setTimeout(done, ROOM_WAIT_MS);
      this.roomWaiter = done;
      this.ending.signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Waits while the transport is full. A consumer held back is counted against the feed once a
   * second: more than `maxBehind` events beyond what it was sent, and not catching up since the last
   * count, and it is told so and ended. A consumer that replays a long backlog as fast as it reads
   * is catching up, not falling behind.
   */
  private async untilRoom(): Promise<'room' | 'slow' | 'ended'> {
    while (!this.options.hasRoom()) {
      if (this.ended) return 'ended';
      if (Date.now() - this.lastBehindCheck >= BEHIND_CHECK_MS) {
        this.lastBehindCheck = Date.now();
        const counted = await this.read({ after: this.delivered, limit: 0, countUpTo: MAX_BACKLOG_COUNT });
        if (counted && !('error' in counted) && counted.beyond !== null) {
          const previous = this.lastBacklog;
          this.lastBacklog = counted.beyond;
          if (counted.beyond > this.options.limits.maxBehind && previous !== undefined && counted.beyond >= previous) return 'slow';
        }
      }
      await this.roomOrTimeout();
    }
    return this.ended ? 'ended' : 'room';
  }

  /** A read of the feed; undefined while the events service does not answer (retried by the caller). */
  private async read(input: Omit<EventFeedInput, 'types' | 'occurredAfter'>): Promise<EventFeedAnswer | undefined> {
    try {
      return await this.options.readFeed({ ...input, ...this.options.filter });
    } catch {
      return undefined;
    }
  }

  private endMessage(): StreamEnd | undefined {
    if (this.endReason === 'key-invalid') return { end: new GraphQLError('Invalid or expired API key', { extensions: { code: 'UNAUTHENTICATED' } }) };
    if (this.endReason === 'access-disabled') {
      return { end: new GraphQLError('API access is not enabled for this account', { extensions: { code: 'FORBIDDEN' } }) };
    }
    if (this.endReason === 'read-revoked') return { end: missingReadScope() };
    return undefined;
  }

  /**
   * The stream's messages. Ending it (`return`, when the client leaves or completes) stops it at
   * once: an async generator's own `return` would wait for its next `yield`, which an idle stream
   * may never reach.
   */
  messages(): AsyncIterableIterator<StreamMessage> {
    const produced = this.produce();
    const iterator: AsyncIterableIterator<StreamMessage> = {
      next: () => produced.next(),
      return: async () => {
        this.end('client-gone');
        const result = await produced.return(undefined);
        // A generator ended before it started runs no `finally`: the stream still gives back its place.
        this.close();
        return result;
      },
      throw: async (error: unknown) => {
        this.end('client-gone');
        try {
          return await produced.throw(error);
        } finally {
          this.close();
        }
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.options.onClosed?.();
  }

  private async *produce(): AsyncGenerator<StreamMessage, undefined> {
    const unsubscribe = this.options.subscribeWakeups(this.options.accountId, () => this.wake());
    const emit = (message: StreamMessage, cursor: string | null) => {
      this.pending.push(cursor);
      if (cursor !== null) this.lastYielded = cursor;
      return message;
    };
    try {
      let position = this.options.after;
      let heldBackLooks = 0;
      let failingSince: number | undefined;
      for (;;) {
        const room = await this.untilRoom();
        if (room === 'slow') {
          yield emit({ end: slowConsumer(this.lastYielded) }, null);
          return;
        }
        if (room === 'ended') break;
        const answer = await this.read({ after: position, limit: PAGE_SIZE, countUpTo: 0 });
        if (this.ended) break;
        if (!answer) {
          failingSince ??= Date.now();
          if (Date.now() - failingSince > FEED_OUTAGE_MS) {
            const unavailable = new GraphQLError('The events service is temporarily unavailable; resume from extensions.cursor', {
              extensions: { code: 'TEMPORARILY_UNAVAILABLE', cursor: this.lastYielded },
            });
            yield emit({ end: unavailable }, null);
            return;
          }
          await this.sleep(250);
          continue;
        }
        failingSince = undefined;
        if ('error' in answer) {
          yield emit({ end: new GraphQLError(answer.error.message, { extensions: { code: answer.error.code } }) }, null);
          return;
        }
        // From now: the first read only names the feed's end, which the stream then follows.
        position = answer.endCursor;
        if (this.lastYielded === null) this.lastYielded = this.delivered = position;
        let stopped: 'slow' | 'ended' | undefined;
        for (const item of answer.items) {
          const itemRoom = await this.untilRoom();
          if (itemRoom !== 'room') {
            stopped = itemRoom;
            break;
          }
          yield emit(item, item.cursor);
        }
        if (stopped === 'slow') {
          yield emit({ end: slowConsumer(this.lastYielded) }, null);
          return;
        }
        if (stopped === 'ended' || this.ended) break;
        if (answer.hasMore) continue;
        if (!answer.heldBack || answer.items.length > 0) heldBackLooks = 0;
        await this.waitForWake(answer.heldBack ? HELD_BACK_LOOK_MS[Math.min(heldBackLooks++, HELD_BACK_LOOK_MS.length - 1)]! : IDLE_LOOK_MS);
      }
      const last = this.endMessage();
      if (last) yield emit(last, null);
    } finally {
      unsubscribe();
      this.close();
    }
    return undefined;
  }
}

/** Contract section 5's refusal of a root field outside the key's scopes, for `Subscription.events`. */
export function missingReadScope(): GraphQLError {
  return new GraphQLError('This API key lacks the scope read', { path: ['events'], extensions: { code: 'FORBIDDEN', requiredScope: 'read' } });
}
