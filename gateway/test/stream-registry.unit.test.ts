import { describe, expect, it } from 'vitest';
import { EventStream } from '../src/streams/event-stream.ts';
import type { KeyStatus } from '../src/authentication.ts';
import { StreamRegistry, type StreamKey } from '../src/streams/registry.ts';

const key = { apiKeyId: 'key-a', expiresAt: null } as StreamKey;

const live = (expiresAt: number | null = null): KeyStatus => ({ kind: 'authenticated', caller: { accountId: 'account-a', apiKeyId: key.apiKeyId, scopes: ['read'] }, expiresAt });

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
    const registry = new StreamRegistry(1, async () => live());
    const first = openedStream(registry);
    expect(await registry.open(first, key)).toBe(true);
    expect(await registry.reserve(key.apiKeyId)).toBeUndefined();
    // What a transport does when the client goes while the subscription is still opening.
    await first.messages().return!(undefined);
    const place = await registry.reserve(key.apiKeyId);
    expect(place).toBeDefined();
    expect(await registry.open(openedStream(registry), key, place)).toBe(true);
  });

  it('ends a stream whose key was revoked between the check of its transport and its admission', async () => {
    const registry = new StreamRegistry(1, async () => ({ kind: 'invalid' }));
    const stream = openedStream(registry);
    expect(await registry.open(stream, key)).toBe(true);
    expect(stream.endReason).toBe('key-invalid');
  });

  it("ends a stream at its key's expiry as last checked: a roll after the stream opened moves it", async () => {
    let status = live();
    const registry = new StreamRegistry(1, async () => status);
    const stream = openedStream(registry);
    await registry.open(stream, key);
    status = live(Date.now() + 50);
    registry.keysChanged();
    await registry.drained();
    expect(stream.endReason).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stream.endReason).toBe('key-invalid');
  });
});
