import { describe, expect, it } from 'vitest';
import { EventStream } from '../src/streams/event-stream.ts';
import { StreamRegistry, type StreamKey } from '../src/streams/registry.ts';

const key = { apiKeyId: 'key-a', expiresAt: null } as StreamKey;

function openedStream(registry: StreamRegistry): EventStream {
  const stream: EventStream = new EventStream({
    accountId: 'account-a',
    after: null,
    filter: { types: null, occurredAfter: null },
    readFeed: () => new Promise(() => undefined),
    subscribeWakeups: () => () => undefined,
    limits: { maxBehind: 1_000 },
    hasRoom: () => true,
    onClosed: () => registry.close(stream, key.apiKeyId),
  });
  return stream;
}

describe('StreamRegistry (one process, no Redis)', () => {
  it('gives back the place of a stream its client left before it started', async () => {
    const registry = new StreamRegistry(1, async () => 'authenticated');
    const first = openedStream(registry);
    expect(await registry.open(first, key)).toBe(true);
    expect(await registry.full(key.apiKeyId)).toBe(true);
    // What a transport does when the client goes while the subscription is still opening.
    await first.messages().return!(undefined);
    expect(await registry.full(key.apiKeyId)).toBe(false);
    expect(await registry.open(openedStream(registry), key)).toBe(true);
  });
});
