import { describe, expect, it } from 'vitest';
import type { EventFeedAnswer, EventFeedInput } from '@ots/shared/event-feed';
import type { KeyStatus } from '../src/authentication.ts';
import { EventStream, type EventStreamOptions } from '../src/streams/event-stream.ts';
import { StreamRegistry, type StreamKey } from '../src/streams/registry.ts';

const never = () => new Promise<never>(() => undefined);

function stream(readFeed: (input: EventFeedInput) => Promise<EventFeedAnswer>, options: Partial<EventStreamOptions> = {}): EventStream {
  return new EventStream({
    accountId: 'account-a',
    after: 'start',
    filter: { types: null, occurredAfter: null },
    readFeed,
    subscribeWakeups: () => () => undefined,
    limits: { maxBehind: 1_000 },
    hasRoom: () => true,
    ...options,
  });
}

/** A feed of endless events: pages of them, and a backlog that only grows. */
function endlessFeed(): (input: EventFeedInput) => Promise<EventFeedAnswer> {
  let next = 0;
  return async (input) => {
    if (input.limit === 0) return { items: [], endCursor: input.after!, hasMore: true, heldBack: false, beyond: 5_000 };
    const items = Array.from({ length: input.limit }, () => {
      const cursor = `c${++next}`;
      return { cursor, event: { id: cursor, type: 'strategy.created', occurredAt: new Date().toISOString(), data: {} } };
    });
    return { items, endCursor: items.at(-1)!.cursor, hasMore: true, heldBack: false, beyond: null };
  };
}

describe('EventStream', () => {
  it('ends a consumer that stops asking for messages (a WebSocket whose client stopped reading) with SLOW_CONSUMER and its last cursor', async () => {
    const ends: string[] = [];
    const events = stream(endlessFeed(), { onEnd: (reason) => ends.push(reason) });
    const messages = events.messages();
    // graphql-ws takes a message, then waits for the socket to send it before asking for the next: never, here.
    const first = await messages.next();
    events.written();
    expect(first.value).toMatchObject({ cursor: 'c1' });
    await expect.poll(() => ends, { timeout: 15_000, interval: 50 }).toEqual(['slow-consumer']);

    const last = await messages.next();
    expect(last.value).toMatchObject({ end: { extensions: { code: 'SLOW_CONSUMER', cursor: 'c1' } } });
    expect((await messages.next()).done).toBe(true);
  });

  it.each([
    ['replays a backlog longer than a count reaches (60,000) read faster than it grows, without being ended', 0, undefined],
    ['ends a consumer over that backlog that takes fewer events than are written meanwhile', 10_000, 'slow-consumer'],
  ] as const)('%s', async (_case, writtenPerSecond, ending) => {
    const backlog = 60_000;
    const started = performance.now();
    const head = () => backlog + Math.floor(((performance.now() - started) / 1000) * writtenPerSecond);
    const positionOf = (cursor: string) => Number(cursor.slice(1));
    const feed = async (input: EventFeedInput): Promise<EventFeedAnswer> => {
      const end = head();
      if (input.after === null) return { items: [], endCursor: `c${end}`, hasMore: false, heldBack: false, beyond: null };
      const from = positionOf(input.after!);
      if (input.limit === 0) return { items: [], endCursor: input.after!, hasMore: end > from, heldBack: false, beyond: Math.min(end - from, input.countUpTo ?? 0) };
      const count = Math.min(input.limit, end - from);
      const items = Array.from({ length: count }, (_, index) => ({
        cursor: `c${from + index + 1}`,
        event: { id: `e${from + index + 1}`, type: 'strategy.created', occurredAt: new Date().toISOString(), data: {} },
      }));
      return { items, endCursor: `c${from + count}`, hasMore: from + count < end, heldBack: false, beyond: null };
    };
    let room = false;
    const ends: string[] = [];
    const events = stream(feed, { after: 'c0', hasRoom: () => room, onEnd: (reason) => ends.push(reason) });
    const messages = events.messages();
    // 40 events every 10 ms (about 4,000 a second), the socket full in between.
    let taken = 0;
    while (performance.now() - started < 4_500 && ends.length === 0) {
      room = true;
      for (let index = 0; index < 40; index += 1) {
        const message = await messages.next();
        events.written();
        if (message.done || 'end' in message.value) break;
        taken += 1;
      }
      room = false;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(ends).toEqual(ending ? [ending] : []);
    expect(taken).toBeGreaterThan(1_000);
    await messages.return?.();
  }, 15_000);

  it('sends a revocation at once, without waiting for a feed read in flight', async () => {
    const events = stream(never);
    const next = events.messages().next();
    await new Promise((resolve) => setTimeout(resolve, 50));
    events.end('key-invalid');
    const ended = await Promise.race([next, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 500))]);
    expect(ended).toMatchObject({ value: { end: { extensions: { code: 'UNAUTHENTICATED' } } } });
  });
});

describe('StreamRegistry', () => {
  it('checks a key again until the key store answers, when the check a change asked for failed', async () => {
    const key = { apiKeyId: 'key-a', expiresAt: null, address: '127.0.0.1' } as StreamKey;
    const live: KeyStatus = { kind: 'authenticated', caller: { accountId: 'account-a', apiKeyId: key.apiKeyId, scopes: ['read'] }, expiresAt: null };
    let answer: () => Promise<KeyStatus> = async () => live;
    const registry = new StreamRegistry(10, () => answer());
    const opened = stream(never, { onClosed: () => registry.close(opened, key.apiKeyId) });
    expect(await registry.open(opened, key)).toBe(true);

    // The key is revoked, and the one check its change asks for meets a database blip.
    let failures = 0;
    answer = async () => {
      if (failures++ < 2) throw new Error('connection terminated');
      return { kind: 'invalid' };
    };
    registry.keysChanged();
    await registry.drained();
    expect(opened.endReason).toBeUndefined();
    await expect.poll(() => opened.endReason, { timeout: 5_000, interval: 20 }).toBe('key-invalid');
  });
});
