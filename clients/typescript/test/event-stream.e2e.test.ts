import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, updateKey } from '@ots/accounts';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { FaultProxy } from '../../../testing/fault-proxy.ts';
import { OtsClient, OtsPermissionError } from '../src/index.ts';
import { StallingRelay } from '@ots/shared/testing/stalling-relay';
import { expectAbortEndsStream, take } from './stream-scenarios.ts';

/**
 * `client.events.stream` against the real stack's GraphQL-over-SSE endpoint, through a relay that
 * cuts open streams (contract section 10): every event arrives once, in order, across the cuts, an
 * outage of the events service, and a cut before the first event of a stream opened from now.
 */
const t = useStack({ env: NO_RATE_LIMIT_ENV, accounts: [] });
let proxy: FaultProxy;

beforeAll(async () => {
  proxy = await new FaultProxy(new URL(t.stack.gatewayUrl)).start();
});
afterAll(async () => {
  await proxy?.close();
});

/** A `fetch` for the client that counts the event streams it opened (their answers' headers came). */
function countingStreams() {
  const counter = {
    opened: 0,
    fetch: (async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith('/graphql/stream') && response.ok) counter.opened += 1;
      return response;
    }) as typeof fetch,
  };
  return counter;
}

/**
 * A `fetch` for the client that counts the events the gateway sent it on its event streams, as they
 * pass (the SSE `next` messages, each whole), and whether a stream it opened is still open.
 */
function countingEvents() {
  const counter = {
    received: 0,
    open: 0,
    fetch: (async (input, init) => {
      const response = await fetch(input, init);
      if (!String(input).endsWith('/graphql/stream') || !response.ok || !response.body) return response;
      counter.open += 1;
      init?.signal?.addEventListener('abort', () => (counter.open -= 1), { once: true });
      const decoder = new TextDecoder();
      let partial = '';
      const counting = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const messages = (partial + decoder.decode(chunk, { stream: true })).split('\n\n');
          partial = messages.pop()!;
          counter.received += messages.filter((message) => /^event: next$/m.test(message)).length;
          controller.enqueue(chunk);
        },
      });
      return new Response(response.body.pipeThrough(counting), { status: response.status, statusText: response.statusText, headers: response.headers });
    }) as typeof fetch,
  };
  return counter;
}

describe('the event stream', () => {
  it('resumes after dropped connections with every event once, in order', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin });
    // The feed's current end: the stream starts there, so no event of this test is before it.
    const start = client.events.list();
    await start.toArray();
    const stream = client.events.stream({ filter: { types: ['strategy.created'] }, after: start.cursor });
    const names = Array.from({ length: 12 }, (_, i) => `Streamed ${i}`);
    const seen: string[] = [];
    const consumed = take(stream, names.length, seen);
    for (const [i, name] of names.entries()) {
      await client.strategies.create({ name });
      if (i % 4 === 3) proxy.dropStreams();
    }
    await consumed;
    expect(seen).toEqual(names);
    expect(stream.cursor).toBeDefined();
  });

  it('outlives an outage of the events service: it reconnects and sees every event once, in order', { timeout: 60_000 }, async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const streams = countingStreams();
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin, fetch: streams.fetch });
    const start = client.events.list();
    await start.toArray();
    const seen: string[] = [];
    const consumed = take(client.events.stream({ filter: { types: ['strategy.created'] }, after: start.cursor }), 3, seen);
    await client.strategies.create({ name: 'Before the stop' });
    await expect.poll(() => seen).toEqual(['Before the stop']);
    await t.stack.stopService('events');
    try {
      // Its event waits in the strategies outbox until the events service is back.
      await client.strategies.create({ name: 'During the stop' });
      // The connection is lost meanwhile: the stream that replaces it finds the feed unanswered, and
      // the gateway ends it with TEMPORARILY_UNAVAILABLE after 5 s; the client opens another.
      proxy.dropStreams();
      await expect.poll(() => streams.opened, { timeout: 15_000 }).toBe(3);
    } finally {
      await t.stack.startService('events');
    }
    await client.strategies.create({ name: 'After the restart' });
    await consumed;
    expect(seen).toEqual(['Before the stop', 'During the stop', 'After the restart']);
  });

  it('opened from now and cut before its first event, it still sees the events committed during the cut', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const gateway = new URL(t.stack.gatewayUrl);
    const relay = new TcpProxy(gateway.hostname, Number(gateway.port));
    await relay.start();
    const streams = countingStreams();
    const client = new OtsClient({ apiKey, baseUrl: `http://127.0.0.1:${relay.port}`, fetch: streams.fetch });
    const direct = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
    const stream = client.events.stream({ filter: { types: ['strategy.created'] } });
    const seen: string[] = [];
    const consumed = take(stream, 2, seen);
    try {
      await expect.poll(() => streams.opened).toBe(1);
      const startedAt = stream.cursor;
      await relay.cut();
      await direct.strategies.create({ name: 'During the cut' });
      await relay.restore();
      await expect.poll(() => streams.opened).toBe(2);
      await direct.strategies.create({ name: 'After the cut' });
      await expect.poll(() => seen).toContain('After the cut');
      expect(seen).toEqual(['During the cut', 'After the cut']);
      await consumed;
      // Where it started is a place to keep, before any event.
      expect(startedAt).toBeDefined();
    } finally {
      await relay.cut();
    }
  });

  it('replaces a connection that went silent without closing, and sees the next event once', { timeout: 90_000 }, async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const relay = await new StallingRelay(new URL(t.stack.gatewayUrl)).start();
    const streams = countingStreams();
    const direct = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
    const client = new OtsClient({ apiKey, baseUrl: relay.origin, fetch: streams.fetch });
    const start = direct.events.list();
    await start.toArray();
    // Longer than the gateway's heartbeats are apart (at most 10 s), with room for a loaded machine.
    const idleTimeoutMs = 12_000;
    const seen: string[] = [];
    const consumed = take(client.events.stream({ filter: { types: ['strategy.created'] }, after: start.cursor, idleTimeoutMs }), 4, seen);
    try {
      await direct.strategies.create({ name: 'Before the silence' });
      await expect.poll(() => seen).toEqual(['Before the silence']);
      // Quiet but alive: its heartbeats keep the connection.
      await new Promise((resolve) => setTimeout(resolve, idleTimeoutMs + 2_000));
      expect(streams.opened).toBe(1);
      relay.stall();
      // Held by the stalled connection, which never passes it on.
      await direct.strategies.create({ name: 'During the silence' });
      await expect.poll(() => streams.opened, { timeout: idleTimeoutMs + 10_000 }).toBe(2);
      await direct.strategies.create({ name: 'After the silence' });
      await direct.strategies.create({ name: 'Later' });
      await consumed;
      expect(seen).toEqual(['Before the silence', 'During the silence', 'After the silence', 'Later']);
    } finally {
      await relay.close();
    }
  });

  it('holds no more than maxBufferedEvents for a consumer that stalls, then hands out every event once, in order', { timeout: 60_000 }, async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const streams = countingEvents();
    const client = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin, fetch: streams.fetch });
    const start = client.events.list();
    await start.toArray();
    const maxBufferedEvents = 5;
    const stream = client.events.stream({ filter: { types: ['strategy.created'] }, after: start.cursor, maxBufferedEvents });
    const events = stream[Symbol.asyncIterator]();
    const names = Array.from({ length: 4 * maxBufferedEvents }, (_, i) => `Behind ${i}`);
    // The consumer takes the first event, then stalls while the rest are written.
    const first = events.next();
    await expect.poll(() => streams.open).toBe(1);
    for (const name of names) {
      const before = streams.received;
      await client.strategies.create({ name });
      // One event at a time reaches the client, each in its own read, until it closes the stream.
      await expect.poll(() => streams.received > before || streams.open === 0).toBe(true);
    }
    expect((await first).value).toMatchObject({ data: { name: names[0] } });
    // The one it handed out, the ones it holds, and the one that found no room, whereupon it closed the stream.
    expect(streams.received).toBeLessThanOrEqual(1 + maxBufferedEvents + 1);
    expect(streams.open).toBe(0);
    const seen = [names[0]!];
    while (seen.length < names.length) seen.push(String((await events.next()).value!.data.name));
    await events.return?.();
    expect(seen).toEqual(names);
  });

  it('ends without an error when its signal aborts, whether it waits for an event or to reconnect', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const gateway = new URL(t.stack.gatewayUrl);
    const relay = new TcpProxy(gateway.hostname, Number(gateway.port));
    await relay.start();
    const streams = countingStreams();
    const client = new OtsClient({ apiKey, baseUrl: `http://127.0.0.1:${relay.port}`, fetch: streams.fetch });
    try {
      await expectAbortEndsStream(relay, () => streams.opened, (signal) => client.events.stream({ signal }));
    } finally {
      await relay.cut();
    }
  });

  it('ends at once when its signal aborts while it asks where "now" is of a gateway that does not answer', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const client = new OtsClient({ apiKey: 'svc_live_unanswered', baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` });
      const stop = new AbortController();
      const reading = (async () => {
        for await (const event of client.events.stream({ signal: stop.signal })) return event;
        return 'ended';
      })();
      await new Promise((resolve) => setTimeout(resolve, 300));
      stop.abort();
      const abortedAt = Date.now();
      await expect(reading).resolves.toBe('ended');
      expect(Date.now() - abortedAt).toBeLessThan(250);
    } finally {
      silent.closeAllConnections?.();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('ends with OtsAuthenticationError for a bad key', async () => {
    const client = new OtsClient({ apiKey: 'svc_live_notakey', baseUrl: proxy.origin });
    const iterate = async () => {
      for await (const event of client.events.stream()) return event;
    };
    await expect(iterate()).rejects.toMatchObject({ name: 'OtsAuthenticationError' });
  });

  it('is refused with OtsPermissionError naming read for a key without it', async () => {
    const { accountId } = await t.stack.createAccountWithKey();
    const { apiKey } = await createKey(t.stack.operator, { accountId, scopes: ['orders:write'] });
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin });
    const failure = await (async () => {
      for await (const event of client.events.stream()) return event;
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect(failure).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'read' });
  });

  it('ends with OtsPermissionError naming read when its key loses the scope', async () => {
    const { accountId } = await t.stack.createAccountWithKey();
    const { key, apiKey } = await createKey(t.stack.operator, { accountId });
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin });
    const start = client.events.list();
    await start.toArray();
    const events = client.events.stream({ after: start.cursor })[Symbol.asyncIterator]();
    const first = events.next();
    const strategy = await client.strategies.create({ name: 'Before the change' });
    expect((await first).value).toMatchObject({ type: 'strategy.created', data: { id: strategy.id } });
    await updateKey(t.stack.operator, { keyId: key.id, scopes: ['strategies:write'] });
    const failure = await events.next().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect(failure).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'read' });
  });
});
