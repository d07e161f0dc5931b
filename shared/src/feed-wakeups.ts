import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { EVENTS_WAKE_CHANNEL, WAKE_EVERYONE } from './event-feed.ts';
import type { Logger } from './logger.ts';

const RECONNECT_MS = 1_000;

export interface FeedWakeupsTimings {
  /**
   * How often the listening connection is asked a question, and how long it has to answer. A
   * connection dropped without a word (an idle flow expired by a NAT or a load balancer, a partition,
   * a failover behind an address) delivers no notification and raises no error: only a question that
   * goes unanswered finds it out, and then it is made again.
   */
  checkEveryMs: number;
  answerWithinMs: number;
}

const TIMINGS: FeedWakeupsTimings = { checkEveryMs: 10_000, answerWithinMs: 5_000 };

/**
 * The gateway side of the events' wake-ups: one Postgres connection LISTENs on the channel the
 * events service notifies when an ingest commits, and wakes the streams of the accounts named.
 * A notification only says "look again": while the connection is down, or when one is lost, the
 * streams' own periodic look finds the events a little later, never not at all. After each
 * (re)connection every stream looks again, for what committed while no one listened.
 */
export class FeedWakeups {
  private readonly listeners = new Map<string, Set<() => void>>();
  private client: pg.Client | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  /** The current connection's question (`FeedWakeupsTimings`). */
  private check: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly databaseUrl: string,
    private readonly log: Logger,
    private readonly timings: FeedWakeupsTimings = TIMINGS,
  ) {}

  start(): void {
    void this.connect();
  }

  /** Calls `wake` whenever events of the account may have committed; returns the function that stops it. */
  subscribe(accountId: string, wake: () => void): () => void {
    let set = this.listeners.get(accountId);
    if (!set) this.listeners.set(accountId, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0 && this.listeners.get(accountId) === set) this.listeners.delete(accountId);
    };
  }

  private wake(payload: string): void {
    if (payload === WAKE_EVERYONE) return this.wakeEveryone();
    for (const accountId of payload.split(',')) for (const wake of this.listeners.get(accountId) ?? []) wake();
  }

  private wakeEveryone(): void {
    for (const set of this.listeners.values()) for (const wake of set) wake();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // Connecting and listening are bounded as the question is: through a proxy that took the
    // connection and passes nothing on, an unbounded connect would wait, and no one listen, for good.
    const client = new pg.Client({
      connectionString: this.databaseUrl,
      application_name: 'gateway-event-wakeups',
      keepAlive: true,
      connectionTimeoutMillis: this.timings.answerWithinMs,
      query_timeout: this.timings.answerWithinMs,
    });
    const retry = () => {
      if (this.client === client) {
        this.client = undefined;
        clearInterval(this.check);
      }
      client.removeAllListeners();
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      if (!this.closed && !this.reconnect) this.reconnect = setTimeout(() => ((this.reconnect = undefined), void this.connect()), RECONNECT_MS).unref();
    };
    client.on('error', (error) => {
      this.log.warn({ err: error }, 'event wake-ups: connection lost; streams look again on their own meanwhile');
      retry();
    });
    client.on('end', retry);
    client.on('notification', (message) => this.wake(message.payload ?? WAKE_EVERYONE));
    try {
      await client.connect();
      await client.query(`listen ${EVENTS_WAKE_CHANNEL}`);
      this.client = client;
      this.wakeEveryone();
      this.check = setInterval(() => {
        client.query('select 1').catch((error: unknown) => {
          if (this.client !== client) return;
          this.log.warn({ err: error }, 'event wake-ups: the connection does not answer; listening again, streams look again on their own meanwhile');
          retry();
        });
      }, this.timings.checkEveryMs).unref();
    } catch (error) {
      this.log.warn({ err: error }, 'event wake-ups: cannot listen; streams look again on their own meanwhile');
      retry();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnect);
    clearInterval(this.check);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners();
      client.on('error', () => undefined);
      // A connection that stopped answering never confirms its end: a stop does not wait for it.
      await Promise.race([client.end().catch(() => undefined), sleep(this.timings.answerWithinMs, undefined, { ref: false })]);
    }
  }
}
