import { createClient as createWsClient } from 'graphql-ws';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import WebSocket from 'ws';
import { launchStack, type RunningStack } from '../../scripts/stack.ts';
import { useStack } from '../../testing/fixture.ts';
import { LEASE_MS } from '../src/streams/leases.ts';
import { EVENTS_SUBSCRIPTION, RawSseStream, streamUrls } from '../../testing/streams.ts';

const t = useStack({ redis: 'proxied', env: { OUTBOX_RELAY_INTERVAL_MS: '20' }, accounts: ['alice'] });

// A second replica of everything (gateway and subgraphs, events included) on the same database and cache.
let second: RunningStack;
beforeAll(async () => {
  second = await launchStack(t.stack.config, { freePorts: true });
});
afterAll(async () => {
  await second?.close();
});

/** The 11th stream's refusal over WebSocket: the subscription's error code. */
async function refusalOverWebSocket(graphqlUrl: string, apiKey: string): Promise<unknown> {
  const client = createWsClient({
    url: streamUrls(graphqlUrl).ws,
    webSocketImpl: class extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers: { 'x-api-key': apiKey } });
      }
    },
    retryAttempts: 0,
  });
  try {
    await client.iterate({ query: EVENTS_SUBSCRIPTION }).next();
    return 'opened';
  } catch (errors) {
    return (errors as { extensions?: { code?: string } }[])[0]?.extensions?.code;
  } finally {
    await client.dispose();
  }
}

// Until its Redis connection is up a gateway counts on its own.
const redisReady = () =>
  vi.waitFor(() => expect([t.stack.running.keys.redis?.status, second.keys.redis?.status]).toEqual(['ready', 'ready']), { timeout: 15_000, interval: 50 });

const names = (stream: RawSseStream) => stream.items.map((item) => item.data?.events.event.data.name);

describe('two gateways and two events processes', () => {
  it('deliver every event to every stream, whichever replica the write went through', async () => {
    const onFirst = await new RawSseStream().open(streamUrls(t.stack.gatewayUrl).sse, t.alice.apiKey, EVENTS_SUBSCRIPTION);
    const onSecond = await new RawSseStream().open(streamUrls(second.gateway.url).sse, t.alice.apiKey, EVENTS_SUBSCRIPTION);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await t.alice.createdStrategy('Through the first');
      const viaSecond = await fetch(second.gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': t.alice.apiKey },
        body: JSON.stringify({ query: 'mutation { createStrategy(input: { name: "Through the second" }) { strategy { id } error { code } } }' }),
      });
      expect(((await viaSecond.json()) as { data: { createStrategy: { error: unknown } } }).data.createStrategy.error).toBeNull();
      await onFirst.waitFor(() => onFirst.items.length >= 2);
      await onSecond.waitFor(() => onSecond.items.length >= 2);
      expect(names(onFirst)).toEqual(['Through the first', 'Through the second']);
      expect(names(onSecond)).toEqual(['Through the first', 'Through the second']);
    } finally {
      onFirst.close();
      onSecond.close();
    }
  });

  it('count the open streams of a key together: 6 on one and 4 on the other, then the 11th is refused on either', async () => {
    await redisReady();
    const client = await t.newAccount('Ten streams');
    const [first, other] = [t.stack.gatewayUrl, second.gateway.url];
    const open = (url: string) => new RawSseStream().open(streamUrls(url).sse, client.apiKey, EVENTS_SUBSCRIPTION);
    const streams = await Promise.all([...Array.from({ length: 6 }, () => open(first)), ...Array.from({ length: 4 }, () => open(other))]);
    try {
      expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
      for (const url of [first, other]) {
        const eleventh = await open(url);
        expect(eleventh.status).toBe(429);
        expect(await refusalOverWebSocket(url, client.apiKey)).toBe('TOO_MANY_STREAMS');
      }

      // Closing one on the second gateway frees its place on the first.
      streams.pop()!.close();
      let reopened: RawSseStream | undefined;
      await expect
        .poll(async () => {
          reopened = await open(first);
          return reopened.status;
        })
        .toBe(200);
      streams.push(reopened!);
      expect((await open(other)).status).toBe(429);
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it('while Redis is unreachable, each gateway counts the streams it holds: the outage refuses none below the limit', async () => {
    await redisReady();
    const client = await t.newAccount('Outage');
    const open = () => new RawSseStream().open(streamUrls(t.stack.gatewayUrl).sse, client.apiKey, EVENTS_SUBSCRIPTION);
    const streams: RawSseStream[] = [];
    await t.stack.redisProxy!.cut();
    try {
      for (let i = 0; i < 10; i += 1) streams.push(await open());
      expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
      expect((await open()).status).toBe(429);
    } finally {
      for (const stream of streams) stream.close();
      await t.stack.redisProxy!.restore();
      await redisReady();
    }
  });

  it('streams open longer than a lease keep their places: their gateways renew them', async () => {
    await redisReady();
    const client = await t.newAccount('Long streams');
    const open = (url: string) => new RawSseStream().open(streamUrls(url).sse, client.apiKey, EVENTS_SUBSCRIPTION);
    const direct = new Redis(inject('redisUrl'));
    const redisNow = async () => Number((await direct.time())[0]) * 1000;
    const streams = await Promise.all(Array.from({ length: 10 }, (_, i) => open(i % 2 === 0 ? t.stack.gatewayUrl : second.gateway.url)));
    try {
      expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
      const openedAt = await redisNow();
      await vi.waitFor(async () => expect(await redisNow()).toBeGreaterThan(openedAt + LEASE_MS + 1_000), { timeout: LEASE_MS * 2, interval: 500 });
      for (const url of [t.stack.gatewayUrl, second.gateway.url]) expect((await open(url)).status).toBe(429);
    } finally {
      for (const stream of streams) stream.close();
      direct.disconnect();
    }
  });

  it("a crashed gateway's streams free their places when their leases run out, unrenewed", async () => {
    await redisReady();
    const client = await t.newAccount('Crashed');
    // What a gateway killed while holding 10 streams of the key leaves in Redis, a second before the leases run out.
    const direct = new Redis(inject('redisUrl'));
    try {
      const [seconds] = await direct.time();
      const expiry = Number(seconds) * 1000 + 1_000;
      await direct.zadd(`${t.stack.config.redisKeyPrefix}streams:${client.apiKeyId}`, ...Array.from({ length: 10 }, (_, i) => [expiry, `crashed-${i}`]).flat());
    } finally {
      direct.disconnect();
    }
    const open = () => new RawSseStream().open(streamUrls(second.gateway.url).sse, client.apiKey, EVENTS_SUBSCRIPTION);
    expect((await open()).status).toBe(429);
    let reopened: RawSseStream | undefined;
    await expect
      .poll(async () => {
        reopened = await open();
        return reopened.status;
      })
      .toBe(200);
    reopened!.close();
  });

  it('a stopping gateway ends its streams without completing them, and the client resumes on the other from its last id', async () => {
    const onSecond = await new RawSseStream().open(streamUrls(second.gateway.url).sse, t.alice.apiKey, EVENTS_SUBSCRIPTION);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await t.alice.createdStrategy('Before the stop');
    await onSecond.waitFor(() => onSecond.items.length >= 1);
    await second.gateway.close();
    await onSecond.done;
    expect(onSecond.messages.map((message) => message.event)).toEqual(['next']);

    const lastId = onSecond.messages.at(-1)!.id!;
    await t.alice.createdStrategy('After the stop');
    const resumed = await new RawSseStream().open(streamUrls(t.stack.gatewayUrl).sse, t.alice.apiKey, EVENTS_SUBSCRIPTION, {}, { 'last-event-id': lastId });
    try {
      await resumed.waitFor(() => resumed.items.length >= 1);
      expect(names(resumed)).toEqual(['After the stop']);
    } finally {
      resumed.close();
    }
  });
});
