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
/** While the transport has no room: how often to look again, for a transport that cannot say when it has. */
const ROOM_WAIT_MS = 20;
/** While the consumer holds the stream back: how often to count how far behind it is. */
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

/** Why a stream ends before its consumer is done with it: its key, its account, the consumer falling behind, the process stopping, or the client leaving. */
export type EndReason = 'key-invalid' | 'access-disabled' | 'read-revoked' | 'slow-consumer' | 'shutdown' | 'client-gone';

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

/** One count of how far a consumer is behind. */
interface BacklogCount {
  /** Events beyond what it was sent, up to MAX_BACKLOG_COUNT. */
  backlog: number;
  /** `writtenEvents` then. */
  written: number;
  /** With a count at its cap: the feed's end then. */
  feedEnd: string | undefined;
}

export class EventStream {
  /** Cursors of messages handed to the transport and not yet written, oldest first (null for an end). */
  private readonly pending: (string | null)[] = [];
  private delivered: string | null;
  private lastYielded: string | null;
  private woken = false;
  private roomWaiter: (() => void) | undefined;
  /** A message was handed out and the consumer has not asked for the next one yet. */
  private awaitingPull = false;
  private behindWatch: NodeJS.Timeout | undefined;
  private countingBehind = false;
  /** The last count while the consumer held the stream back (`countBehind`). */
  private lastCount: BacklogCount | undefined;
  /** Events the transport has written: how far the consumer moved between two counts. */
  private writtenEvents = 0;
  private closed = false;
  private done = false;
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
    if (cursor !== null) {
      this.delivered = cursor;
      this.writtenEvents += 1;
    }
    this.roomMaybe();
    return cursor;
  }

  /** The transport may have room again (its socket drained): a stream waiting for room looks at once. */
  roomMaybe(): void {
    this.roomWaiter?.();
  }

  /**
   * Ends the stream (revocation, a slow consumer, shutdown); the transport closes what it must. An
   * ended stream delivers no more events, so its place is given back at once: its consumer may take
   * the end message late or never (a socket the client stopped reading).
   */
  end(reason: EndReason): void {
    if (this.endReason) return;
    this.endReason = reason;
    this.ending.abort();
    this.wake();
    this.close();
    this.options.onEnd?.(reason);
  }

  get ended(): boolean {
    return this.ending.signal.aborted;
  }

  /** Whether every message was taken, the end included, or the stream was stopped. */
  get finished(): boolean {
    return this.done;
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

  /** Waits while the transport is full (how far behind that leaves the consumer is `countBehind`'s business). */
  private async untilRoom(): Promise<'room' | 'ended'> {
    while (!this.options.hasRoom()) {
      if (this.ended) return 'ended';
      await this.roomOrTimeout();
    }
    return this.ended ? 'ended' : 'room';
  }

  /**
   * Once a second while the consumer holds the stream back (the transport has no room, or it has not
   * asked for the next message), counts the events beyond what it was sent: more than `maxBehind`,
   * and not catching up since the last count, and the stream ends with SLOW_CONSUMER. Counted on a
   * timer, not when the stream next runs: a transport that sends one message at a time and waits for
   * the socket to take it (graphql-ws) never asks again while the client's window is full. A consumer
   * that replays a long backlog as fast as it reads is catching up, not falling behind.
   *
   * A count stops at MAX_BACKLOG_COUNT, and two counts at the cap say nothing of whether the backlog
   * shrank: then the events written to the feed since the first (counted beyond the feed's end as it
   * was then) are weighed against those the consumer took meanwhile. A replay of 60,000 events read
   * faster than they come is never ended for being long.
   */
  private async countBehind(): Promise<void> {
    if (this.countingBehind || this.ended) return;
    if (!this.awaitingPull && this.options.hasRoom()) {
      this.lastCount = undefined;
      return;
    }
    this.countingBehind = true;
    try {
      const counted = await this.read({ after: this.delivered, limit: 0, countUpTo: MAX_BACKLOG_COUNT });
      if (!counted || 'error' in counted || counted.beyond === null) return;
      const capped = counted.beyond >= MAX_BACKLOG_COUNT;
      const previous = this.lastCount;
      const count: BacklogCount = { backlog: counted.beyond, written: this.writtenEvents, feedEnd: capped ? await this.feedEnd() : undefined };
      this.lastCount = count;
      if (counted.beyond <= this.options.limits.maxBehind || previous === undefined) return;
      if (!capped || previous.feedEnd === undefined) {
        if (counted.beyond >= previous.backlog) this.end('slow-consumer');
        return;
      }
      const arrived = await this.read({ after: previous.feedEnd, limit: 0, countUpTo: MAX_BACKLOG_COUNT });
      if (!arrived || 'error' in arrived || arrived.beyond === null) return;
      if (arrived.beyond >= count.written - previous.written) this.end('slow-consumer');
    } finally {
      this.countingBehind = false;
    }
  }

  /** The feed's end now (a read from now names it), from which the events written after it are counted. */
  private async feedEnd(): Promise<string | undefined> {
    const now = await this.read({ after: null, limit: 1, countUpTo: 0 });
    return now && !('error' in now) ? now.endCursor : undefined;
  }

  /**
   * A read of the feed; undefined while the events service does not answer (retried by the caller),
   * and at once when the stream ends: its end message (a revocation's) does not wait on the read,
   * which another stream sharing it (shared-reads.ts) may still need.
   */
  private async read(input: Omit<EventFeedInput, 'types' | 'occurredAfter'>): Promise<EventFeedAnswer | undefined> {
    if (this.ended) return undefined;
    const signal = this.ending.signal;
    let stop: (() => void) | undefined;
    const ended = new Promise<undefined>((resolve) => {
      stop = () => resolve(undefined);
      signal.addEventListener('abort', stop, { once: true });
    });
    try {
      return await Promise.race([this.options.readFeed({ ...input, ...this.options.filter }), ended]);
    } catch {
      return undefined;
    } finally {
      signal.removeEventListener('abort', stop!);
    }
  }

  private endMessage(): StreamEnd | undefined {
    if (this.endReason === 'key-invalid') return { end: new GraphQLError('Invalid or expired API key', { extensions: { code: 'UNAUTHENTICATED' } }) };
    if (this.endReason === 'access-disabled') {
      return { end: new GraphQLError('API access is not enabled for this account', { extensions: { code: 'FORBIDDEN' } }) };
    }
    if (this.endReason === 'read-revoked') return { end: missingReadScope() };
    if (this.endReason === 'slow-consumer') return { end: slowConsumer(this.lastYielded) };
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
      next: async () => {
        this.awaitingPull = false;
        const result = await produced.next();
        this.awaitingPull = !result.done;
        return result;
      },
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
    this.behindWatch = setInterval(() => void this.countBehind(), BEHIND_CHECK_MS);
    this.behindWatch.unref();
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
        if ((await this.untilRoom()) === 'ended') break;
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
        for (const item of answer.items) {
          if ((await this.untilRoom()) === 'ended') break;
          yield emit(item, item.cursor);
        }
        if (this.ended) break;
        if (answer.hasMore) continue;
        if (!answer.heldBack || answer.items.length > 0) heldBackLooks = 0;
        await this.waitForWake(answer.heldBack ? HELD_BACK_LOOK_MS[Math.min(heldBackLooks++, HELD_BACK_LOOK_MS.length - 1)]! : IDLE_LOOK_MS);
      }
      const last = this.endMessage();
      if (last) yield emit(last, null);
    } finally {
      clearInterval(this.behindWatch);
      unsubscribe();
      this.close();
      this.done = true;
    }
    return undefined;
  }
}

/** Contract section 5's refusal of a root field outside the key's scopes, for `Subscription.events`. */
export function missingReadScope(): GraphQLError {
  return new GraphQLError('This API key lacks the scope read', { path: ['events'], extensions: { code: 'FORBIDDEN', requiredScope: 'read' } });
}
