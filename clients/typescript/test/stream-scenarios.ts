import { expect } from 'vitest';
import type { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import type { Event } from '../src/index.ts';

/** The names of the stream's first `count` events, pushed to `seen` as they come; then the stream is closed. */
export async function take(events: AsyncIterable<Event>, count: number, seen: string[]): Promise<void> {
  for await (const event of events) {
    seen.push(String(event.data.name));
    if (seen.length === count) return;
  }
}

/**
 * A stream through `relay` (`open` makes one on the signal given; `opened` counts its connections)
 * ends without an error when its signal aborts, once while it waits for an event and once while it
 * backs off between attempts to reconnect to a gateway out of reach, at once.
 */
export async function expectAbortEndsStream(relay: TcpProxy, opened: () => number, open: (signal: AbortSignal) => AsyncIterable<Event>): Promise<void> {
  const read = async (signal: AbortSignal) => {
    const events: Event[] = [];
    for await (const event of open(signal)) events.push(event);
    return events;
  };
  const waiting = new AbortController();
  const whileWaiting = read(waiting.signal);
  await expect.poll(opened).toBe(1);
  waiting.abort();
  await expect(whileWaiting).resolves.toEqual([]);

  const reconnecting = new AbortController();
  const whileReconnecting = read(reconnecting.signal);
  await expect.poll(opened).toBe(2);
  await relay.cut();
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  reconnecting.abort();
  const abortedAt = Date.now();
  await expect(whileReconnecting).resolves.toEqual([]);
  expect(Date.now() - abortedAt).toBeLessThan(250);
}
