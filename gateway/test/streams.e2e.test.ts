import http from 'node:http';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createKey, revokeKey, rollKey, setApiAccess, updateKey } from '@ots/accounts';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { useStack } from '../../testing/fixture.ts';
import { EVENTS_SUBSCRIPTION, RawSseStream, feedEndCursor, ingestEvents, openStreamPlaces, streamUrls, type StreamedEvent } from '../../testing/streams.ts';

const t = useStack({ redis: 'direct', env: { OUTBOX_RELAY_INTERVAL_MS: '20', RATE_LIMIT_PER_SECOND: '1000', RATE_LIMIT_BURST: '1000' }, accounts: ['alice', 'bob'] });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const urls = () => streamUrls(t.stack.gatewayUrl);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function rawStream(): RawSseStream {
  const stream = new RawSseStream();
  cleanups.push(() => stream.close());
  return stream;
}

type ObservedWsClient = WsClient & { connected: Promise<void>; closed: Promise<{ code: number; reason: string }> };

function wsClient(apiKey: string | undefined, options: { viaHeader?: boolean; url?: string; headers?: Record<string, string> } = {}): ObservedWsClient {
  let connected!: () => void;
  const connectedPromise = new Promise<void>((resolve) => (connected = resolve));
  let closed!: (event: { code: number; reason: string }) => void;
  const closedPromise = new Promise<{ code: number; reason: string }>((resolve) => (closed = resolve));
  const headers = { ...options.headers, ...(options.viaHeader && apiKey ? { 'x-api-key': apiKey } : {}) };
  const client = createWsClient({
    url: options.url ?? urls().ws,
    webSocketImpl: class extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers });
      }
    },
    connectionParams: options.viaHeader || !apiKey ? undefined : { 'X-API-Key': apiKey },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { connected: () => connected(), closed: (event) => closed(event as { code: number; reason: string }) },
  });
  cleanups.push(() => client.dispose());
  return Object.assign(client, { connected: connectedPromise, closed: closedPromise });
}

/** Every event id of the feed after `start`, in feed order, read with listEvents. */
async function feedIds(client: typeof t.alice, start: string): Promise<string[]> {
  const ids: string[] = [];
  let after = start;
  for (;;) {
    const page = await client.listEvents({ first: 200, after });
    ids.push(...page.nodes.map((node) => node.id));
    after = page.pageInfo.endCursor!;
    if (!page.pageInfo.hasNextPage) return ids;
  }
}

describe('the events subscription over SSE (graphql-sse client)', () => {
  it('streams new events in commit order, each with its cursor as the SSE id', async () => {
    const client = await t.newAccount('Sse');
    const after = await feedEndCursor(client);
    const sse = createSseClient({ url: urls().sse, headers: { 'x-api-key': client.apiKey }, retryAttempts: 0 });
    cleanups.push(() => sse.dispose());
    const received: StreamedEvent[] = [];
    const iterator = sse.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION, variables: { after } });
    cleanups.push(() => iterator.return?.());
    const reading = (async () => {
      for await (const result of iterator) {
        received.push(result.data!.events);
        if (received.length === 3) return;
      }
    })();
    for (const name of ['One', 'Two', 'Three']) await client.createdStrategy(name);
    await reading;
    expect(received.map((item) => item.event.data.name)).toEqual(['One', 'Two', 'Three']);
    const feed = await client.listEvents({ first: 10, after });
    expect(received.map((item) => item.event.id)).toEqual(feed.nodes.map((node) => node.id));
    expect(received.map((item) => item.cursor)).toHaveLength(3);
  });
});

describe('the events subscription over WebSocket (graphql-ws client)', () => {
  it('streams new events with the key in connection_init, and closes 4401 without a key', async () => {
    const client = await t.newAccount('Ws');
    const ws = wsClient(client.apiKey);
    const received: StreamedEvent[] = [];
    const iterator = ws.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION, variables: { after: await feedEndCursor(client) } });
    const reading = (async () => {
      for await (const result of iterator) {
        received.push(result.data!.events);
        if (received.length === 2) return;
      }
    })();
    await client.createdStrategy('Alpha');
    await client.createdStrategy('Beta');
    await reading;
    expect(received.map((item) => item.event.data.name)).toEqual(['Alpha', 'Beta']);

    const anonymous = wsClient(undefined);
    expect(await anonymous.closed).toMatchObject({ code: 4401, reason: 'Invalid or expired API key' });
  });
});

describe("Apollo Client's subscription link (GraphQLWsLink)", () => {
  it('receives the events through an ApolloClient subscribe', async () => {
    const { ApolloClient, InMemoryCache, gql } = await import('@apollo/client');
    const { GraphQLWsLink } = await import('@apollo/client/link/subscriptions');
    const client = await t.newAccount('Apollo');
    const ws = wsClient(client.apiKey);
    const apollo = new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache() });
    const received: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      const subscription = apollo
        .subscribe<{ events: StreamedEvent }>({ query: gql(EVENTS_SUBSCRIPTION), variables: { after: null } })
        .subscribe({
          next: (result) => {
            received.push(String(result.data!.events.event.data.name));
            if (received.length === 2) {
              subscription.unsubscribe();
              resolve();
            }
          },
          error: reject,
        });
    });
    // From now (no after): the stream fixes "now" with its first read, right after it is registered.
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId)).toBe(1);
    await client.createdStrategy('Link 1');
    await client.createdStrategy('Link 2');
    await done;
    expect(received).toEqual(['Link 1', 'Link 2']);
  });
});

describe('held back', () => {
  it('delivers an event held back behind an unrelated open transaction soon after that transaction ends, with no wake-up of its own', async () => {
    const client = await t.newAccount('Held back');
    const stream = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION, { after: await feedEndCursor(client) });
    // A transaction that has written (so has an id) and stays open: every commit after it is held back until it ends.
    const blocker = new pg.Client({ connectionString: t.stack.config.databaseUrl });
    await blocker.connect();
    cleanups.push(() => blocker.end());
    await blocker.query('begin');
    await blocker.query('select pg_current_xact_id()');
    const [id] = await ingestEvents(t.stack.config, client.accountId, 1, 'held');
    // Long enough for the stream's looks after the ingest's wake-up to have found it held back several times.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(stream.items).toEqual([]);
    await blocker.query('commit');
    const committedAt = Date.now();
    await stream.waitFor(() => stream.items.length >= 1, 10_000);
    expect(stream.items.map((item) => item.data!.events.event.id)).toEqual([id]);
    expect(Date.now() - committedAt).toBeLessThan(3_000);
  });
});

describe('resuming', () => {
  it('after a disconnect mid-burst, Last-Event-ID resumes with every event exactly once, in feed order', async () => {
    const client = await t.newAccount('Resume');
    const start = await feedEndCursor(client);
    const written = await ingestEvents(t.stack.config, client.accountId, 600, 'resume');
    const first = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION, { after: start });
    expect(first.status).toBe(200);
    // Like every answer to a valid key (contract section 8), the stream's shows where the key stands.
    expect(first.headers?.get('ratelimit-policy')).toBe('"api-key";q=1000;w=1');
    expect(first.headers?.get('ratelimit')).toMatch(/^"api-key";r=\d+;t=\d+$/);
    await first.waitFor(() => first.items.length >= 150);
    first.close();
    const seen = first.items.map((item) => item.data!.events);
    const lastId = first.messages.filter((message) => message.event === 'next').at(-1)!.id!;
    expect(lastId).toBe(seen.at(-1)!.cursor);

    // The reconnect sends the original body (after: start) and Last-Event-ID, which wins.
    const second = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION, { after: start }, { 'last-event-id': lastId });
    await second.waitFor(() => seen.length + second.items.length >= 600);
    const all = [...seen, ...second.items.map((item) => item.data!.events)];
    // Feed order (commit order, then id within a commit) is the stream's order.
    expect(all.map((item) => item.event.id)).toEqual(await feedIds(client, start));
    expect(new Set(all.map((item) => item.event.id))).toEqual(new Set(written));
  });

  it('replays what is committed, then goes live, under concurrent writes: nothing missed, nothing twice', async () => {
    const client = await t.newAccount('Replay');
    const start = await feedEndCursor(client);
    const written: string[] = [];
    /** Events of the rounds begun once the stream had opened: none of them was committed before it. */
    const writtenAfterOpening = new Set<string>();
    let strategiesCreated = 0;
    let writing = true;
    let stream: RawSseStream | undefined;
    /** Whether the stream has delivered an event written after it opened: it follows the writes as they commit. */
    const live = () => stream !== undefined && stream.items.some((item) => writtenAfterOpening.has(item.data!.events.event.id));
    // Writes until the stream has gone live, and a few rounds beyond, so that it both replays and
    // follows concurrent writes whatever the machine's pace.
    const writer = (async () => {
      let roundsLive = 0;
      for (let round = 0; roundsLive < 5 && round < 200; round += 1) {
        const afterOpening = stream !== undefined;
        const ids = await ingestEvents(t.stack.config, client.accountId, 20, `r${round}`);
        written.push(...ids);
        if (afterOpening) for (const id of ids) writtenAfterOpening.add(id);
        if (round % 5 === 0) {
          await client.createdStrategy(`Live ${round}`);
          strategiesCreated += 1;
        }
        if (live()) roundsLive += 1;
      }
      writing = false;
    })();
    // Something committed before it opens, for it to replay.
    await expect.poll(() => written.length).toBeGreaterThanOrEqual(100);
    stream = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION, { after: start });
    const writingWhenOpened = writing;
    await writer;
    expect(writingWhenOpened).toBe(true);
    expect(writtenAfterOpening.size).toBeGreaterThan(0);
    expect(live()).toBe(true);
    await expect.poll(async () => (await feedIds(client, start)).length).toBe(written.length + strategiesCreated);
    const expected = await feedIds(client, start);
    await stream.waitFor(() => stream.items.length >= expected.length);
    expect(stream.items.map((item) => item.data!.events.event.id)).toEqual(expected);
  });
});

describe('isolation and limits', () => {
  it("never sends another account's events", async () => {
    const bob = await t.newAccount('Bob stream');
    const alice = await t.newAccount('Alice stream');
    const stream = await rawStream().open(urls().sse, bob.apiKey, EVENTS_SUBSCRIPTION, { after: await feedEndCursor(bob) });
    await ingestEvents(t.stack.config, alice.accountId, 50, 'alice');
    await alice.createdStrategy('Alice own');
    await bob.createdStrategy('Bob own');
    await stream.waitFor(() => stream.items.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(stream.items.map((item) => item.data!.events.event.data.name)).toEqual(['Bob own']);

    // Another account's cursor is refused, not read.
    const aliceCursor = await feedEndCursor(alice);
    const refused = await rawStream().open(urls().sse, bob.apiKey, EVENTS_SUBSCRIPTION, { after: aliceCursor });
    await refused.waitFor(() => refused.items.length >= 1);
    expect(refused.items[0]!.errors![0]!.extensions!.code).toBe('BAD_USER_INPUT');
  });

  it('refuses the 11th open stream of a key with 429, over SSE and over WebSocket', async () => {
    const client = await t.newAccount('Eleven');
    const streams = await Promise.all(Array.from({ length: 10 }, () => rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION)));
    expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
    const eleventh = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION);
    expect(eleventh.status).toBe(429);
    expect(eleventh.headers!.get('retry-after')).toBe('1');

    const ws = wsClient(client.apiKey, { viaHeader: true });
    await expect(ws.iterate({ query: EVENTS_SUBSCRIPTION }).next()).rejects.toSatisfy((errors: { extensions?: { code?: string } }[]) =>
      errors[0]?.extensions?.code === 'TOO_MANY_STREAMS',
    );

    // Closing one frees its place.
    streams[0]!.close();
    await expect.poll(async () => (await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION)).status).toBe(200);
  });

  it("refuses a key's WebSocket connections past 20 with 1013 while another key still connects; a stock client retrying gets in once one closes", async () => {
    const client = await t.newAccount('Many sockets');
    const sockets = Array.from({ length: 20 }, () => wsClient(client.apiKey, { viaHeader: true }));
    await Promise.all(sockets.map((ws) => ws.connected));
    const refused = wsClient(client.apiKey, { viaHeader: true });
    expect(await refused.closed).toMatchObject({ code: 1013, reason: 'At most 20 WebSocket connections per API key: close one first' });

    const other = await t.newAccount('Other sockets');
    await wsClient(other.apiKey, { viaHeader: true }).connected;

    // graphql-ws's own client, retrying as it does by default: the close must not be one it takes as fatal.
    let refusals = 0;
    let connected!: () => void;
    const retrying = createWsClient({
      url: urls().ws,
      connectionParams: { 'X-API-Key': client.apiKey },
      webSocketImpl: WebSocket,
      retryAttempts: 20,
      retryWait: () => new Promise((resolve) => setTimeout(resolve, 200)),
      lazy: false,
      on: { closed: () => (refusals += 1), connected: () => connected() },
    });
    cleanups.push(() => retrying.dispose());
    const gotIn = new Promise<void>((resolve) => (connected = resolve));
    await expect.poll(() => refusals).toBeGreaterThanOrEqual(1);
    await sockets[0]!.dispose();
    await gotIn;
  });

  it('opens an SSE stream whose opening outlasts the gateway timeout, and frees its place once it is closed', async () => {
    const client = await t.newAccount('Slow opening');
    const keyStore = t.stack.running.keys.keyStore;
    // Authentication answers from the key cache; the look-up a stream makes once registered is the slow one.
    await t.stack.graphql(client.apiKey, '{ viewer { __typename } }');
    const slowLookups = new Proxy(keyStore, {
      get: (target, property) => {
        if (property === 'lookup') {
          return async (...args: Parameters<typeof keyStore.lookup>) => {
            await sleep(600);
            return target.lookup(...args);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const gateway = await t.stack.anotherGateway({ config: { limits: { ...t.stack.config.limits, gatewayTimeoutMs: 200 } }, keyStore: slowLookups });
    cleanups.push(() => gateway.close());
    const url = streamUrls(gateway.url).sse;

    const streams = await Promise.all(Array.from({ length: 10 }, () => rawStream().open(url, client.apiKey, EVENTS_SUBSCRIPTION)));
    expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
    for (const stream of streams) stream.close();
    await expect
      .poll(async () => {
        const again = await rawStream().open(url, client.apiKey, EVENTS_SUBSCRIPTION);
        again.close();
        return again.status;
      })
      .toBe(200);
  });

  it('answers authentication failures before the stream opens, as /graphql does', async () => {
    const bad = await rawStream().open(urls().sse, 'svc_live_not-a-key', EVENTS_SUBSCRIPTION);
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.body)).toEqual({ detail: 'Invalid or expired API key' });
    const query = await rawStream().open(urls().sse, t.alice.apiKey, '{ viewer { __typename } }');
    expect(query.status).toBe(400);
    expect(JSON.parse(query.body).errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('refuses a subscription on POST /graphql with BAD_REQUEST naming the stream endpoints', async () => {
    const answer = await t.stack.graphql(t.alice.apiKey, EVENTS_SUBSCRIPTION);
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].extensions.code).toBe('BAD_REQUEST');
    expect(answer.body.errors[0].message).toContain('/graphql/stream');
    expect(answer.body.errors[0].message).toContain('/graphql/ws');
  });
});

describe('ending streams', () => {
  it("ends a revoked key's streams within the second: an UNAUTHENTICATED error over SSE, close 4401 over WebSocket", async () => {
    const client = await t.newAccount('Revoked');
    const sse = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION);
    const ws = wsClient(client.apiKey, { viaHeader: true });
    const wsEnded = ws.iterate({ query: EVENTS_SUBSCRIPTION }).next().catch((error: unknown) => error);
    // Both registered, so that it is a live stream that ends: a key revoked before would be refused at the door alike.
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId)).toBe(2);
    await revokeKey(t.stack.operator, { keyId: client.apiKeyId });
    await sse.waitFor(() => sse.items.length >= 1, 10_000);
    expect(sse.items[0]!.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
    await sse.done;
    expect((await ws.closed).code).toBe(4401);
    expect(await wsEnded).toMatchObject({ code: 4401 });
  });

  it("ends a disabled account's streams: a FORBIDDEN error over SSE, close 4403 over WebSocket", async () => {
    const client = await t.newAccount('Disabled');
    const sse = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION);
    const ws = wsClient(client.apiKey);
    const wsEnded = ws.iterate({ query: EVENTS_SUBSCRIPTION }).next().catch((error: unknown) => error);
    // Both registered, so that it is a live stream that ends: an account disabled before would be refused at the door alike.
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId)).toBe(2);
    await setApiAccess(t.stack.operator, { accountId: client.accountId, enabled: false });
    await sse.waitFor(() => sse.items.length >= 1, 10_000);
    expect(sse.items[0]!.errors![0]!.extensions!.code).toBe('FORBIDDEN');
    await sse.done;
    expect(await ws.closed).toMatchObject({ code: 4403, reason: 'API access is not enabled for this account' });
    expect(await wsEnded).toMatchObject({ code: 4403 });
  });

  it('ends a consumer more than 1,000 events behind with SLOW_CONSUMER and its last cursor, from which it resumes', async () => {
    const client = await t.newAccount('Slow');
    const start = await feedEndCursor(client);
    const stalled = await stalledSseStream(client.apiKey, { after: start });
    const written: string[] = [];
    // The sockets' buffers take the first few hundred kilobytes (a client that does not read keeps its
    // window small); what lies beyond them is what the consumer is behind by.
    for (let round = 0; round < 3; round += 1) written.push(...(await ingestEvents(t.stack.config, client.accountId, 1000, 'x'.repeat(3000))));
    // Until the gateway has ended the stream (it gives back the key's place in Redis as it does), however long a loaded machine takes.
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId), { timeout: 30_000, interval: 100 }).toBe(0);
    const received = await stalled.readAll();
    const last = received.items.at(-1)!;
    expect(last.errors?.[0]?.extensions?.code).toBe('SLOW_CONSUMER');
    const cursor = last.errors![0]!.extensions!.cursor as string;
    const delivered = received.items.slice(0, -1).map((item) => item.data!.events);
    expect(cursor).toBe(delivered.at(-1)!.cursor);
    expect(written.length - delivered.length).toBeGreaterThan(1000);

    const resumed = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION, { after: cursor });
    await resumed.waitFor(() => delivered.length + resumed.items.length >= written.length, 60_000);
    const all = [...delivered, ...resumed.items.map((item) => item.data!.events)].map((item) => item.event.id);
    expect(all).toEqual(await feedIds(client, start));
    expect(new Set(all)).toEqual(new Set(written));
  }, 120_000);
});

describe('a key that changes after its WebSocket was acknowledged', () => {
  const VIEWER = '{ viewer { __typename } }';

  /** Reads a subscription on the socket until it ends: what it delivered, and how it ended. */
  function subscribe(ws: ObservedWsClient, after: string) {
    const received: StreamedEvent[] = [];
    const ended = (async () => {
      try {
        for await (const result of ws.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION, variables: { after } })) {
          if (result.data) received.push(result.data.events);
          else return result.errors;
        }
        return 'completed';
      } catch (error) {
        return error;
      }
    })();
    return { received, ended };
  }

  it('a revoked key subscribes nothing on a socket acknowledged before: it is closed 4401 within the second', async () => {
    const client = await t.newAccount('Revoked idle');
    const after = await feedEndCursor(client);
    const ws = wsClient(client.apiKey, { viaHeader: true });
    await ws.connected;
    await revokeKey(t.stack.operator, { keyId: client.apiKeyId });
    const revokedAt = Date.now();
    const closed = ws.closed.then(({ code, reason }) => ({ code, reason, afterRevocationMs: Date.now() - revokedAt }));
    await expect.poll(async () => (await t.stack.graphql(client.apiKey, VIEWER)).status).toBe(401);

    const late = subscribe(ws, after);
    await ingestEvents(t.stack.config, client.accountId, 1, 'after revocation');
    expect(await Promise.race([closed, sleep(3_000).then(() => 'still open')])).toMatchObject({ code: 4401, reason: 'Invalid or expired API key' });
    expect((await closed).afterRevocationMs).toBeLessThanOrEqual(1_000);
    await late.ended;
    expect(late.received).toEqual([]);
  });

  it('a key that expires closes its socket 4401 within the second, though the socket holds no stream', async () => {
    const { accountId } = await t.newAccount('Expiring idle');
    const { apiKey, key } = await createKey(t.stack.operator, { accountId, expiresInMs: 2_500 });
    const ws = wsClient(apiKey, { viaHeader: true });
    await ws.connected;
    const closed = ws.closed.then(({ code, reason }) => ({ code, reason, afterExpiryMs: Date.now() - key.expires_at!.getTime() }));
    expect(await Promise.race([closed, sleep(6_000).then(() => 'still open')])).toMatchObject({ code: 4401, reason: 'Invalid or expired API key' });
    expect((await closed).afterExpiryMs).toBeLessThanOrEqual(1_000);
  });

  it('a key that lost read cannot subscribe again on the socket its stream ended on', async () => {
    const client = await t.newAccount('Read removed');
    const after = await feedEndCursor(client);
    const ws = wsClient(client.apiKey);
    const first = subscribe(ws, after);
    // Registered, so that it is a live stream that ends: a key without read is refused at subscribe alike.
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId)).toBe(1);
    await updateKey(t.stack.operator, { keyId: client.apiKeyId, scopes: ['orders:write'] });
    expect(await first.ended).toMatchObject([{ extensions: { code: 'FORBIDDEN', requiredScope: 'read' } }]);

    const again = subscribe(ws, after);
    await ingestEvents(t.stack.config, client.accountId, 1, 'after read removed');
    expect(await Promise.race([again.ended, sleep(2_000).then(() => 'still open')])).toMatchObject([{ extensions: { code: 'FORBIDDEN', requiredScope: 'read' } }]);
    expect(again.received).toEqual([]);
  });

  it("ends a rolled key's stream within the second after its grace", async () => {
    const client = await t.newAccount('Rolled');
    const sse = await rawStream().open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION);
    expect(sse.status).toBe(200);
    const { previousExpiresAt } = await rollKey(t.stack.operator, { keyId: client.apiKeyId, graceMs: 2_000 });
    await sse.waitFor(() => sse.items.length >= 1, 15_000);
    const endedAt = Date.now();
    expect(sse.items[0]!.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
    // Not during the grace (a timer may fire a millisecond or so early by the wall clock).
    expect(endedAt - previousExpiresAt.getTime()).toBeGreaterThanOrEqual(-50);
    expect(endedAt - previousExpiresAt.getTime()).toBeLessThanOrEqual(1_000);
  });
});

describe('WebSocket behind a TLS-terminating proxy', () => {
  it('in production, takes the scheme the trusted proxy appended to X-Forwarded-Proto, not the one its client sent', async () => {
    const gateway = await t.stack.anotherGateway({ config: { production: true, trustProxy: ['loopback'] } });
    cleanups.push(() => gateway.close());
    const url = streamUrls(gateway.url).ws;
    // The client claimed https; the proxy, which received plain HTTP, appended http.
    const spoofed = wsClient(t.alice.apiKey, { viaHeader: true, url, headers: { 'x-forwarded-proto': 'https, http' } });
    expect(await Promise.race([spoofed.closed, spoofed.connected.then(() => 'acknowledged')])).toMatchObject({ code: 4400, reason: 'API keys are accepted over HTTPS only' });
    const proxied = wsClient(t.alice.apiKey, { viaHeader: true, url, headers: { 'x-forwarded-proto': 'http, https' } });
    await proxied.connected;
  });
});

/** An SSE request whose client stops reading at once: the server sees its buffers fill, as with a consumer that cannot keep up. */
async function stalledSseStream(apiKey: string, variables: Record<string, unknown>) {
  const body = JSON.stringify({ query: EVENTS_SUBSCRIPTION, variables });
  const request = http.request(urls().sse, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': apiKey },
  });
  request.end(body);
  // Unread, the response stays paused, and so does its socket once the parser's buffer is full.
  const response = await new Promise<http.IncomingMessage>((resolve) => request.once('response', resolve));
  expect(response.statusCode).toBe(200);
  cleanups.push(() => request.destroy());
  return {
    readAll: async () => {
      response.setEncoding('utf8');
      let text = '';
      response.on('data', (chunk: string) => (text += chunk));
      await Promise.race([new Promise((resolve) => response.once('end', resolve)), new Promise((resolve) => setTimeout(resolve, 30_000))]);
      const items = [...text.matchAll(/event: next\ndata: (.*)\n\n/g)].map((match) => JSON.parse(match[1]!));
      return { items } as { items: { data?: { events: StreamedEvent }; errors?: { extensions?: Record<string, unknown> }[] }[] };
    },
  };
}
