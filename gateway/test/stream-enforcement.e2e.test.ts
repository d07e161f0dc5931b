import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ACCOUNTS_SCHEMA, ApiKeyStore, hashApiKey, readKeyCacheGeneration, revokeKey, type AccountsDatabase, type KeyRecord } from '@ots/accounts';
import { createDatabase } from '@ots/shared/db';
import { createLogger } from '@ots/shared/logger';
import { useStack } from '../../testing/fixture.ts';
import { topLevelError } from '../../testing/requests.ts';
import { EVENTS_SUBSCRIPTION, RawSseStream, feedEndCursor, ingestEvents, openStreamPlaces, streamUrls, type StreamedEvent } from '../../testing/streams.ts';

const t = useStack({ redis: 'direct', env: { OUTBOX_RELAY_INTERVAL_MS: '20', RATE_LIMIT_PER_SECOND: '1000', RATE_LIMIT_BURST: '1000' }, accounts: [] });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const urls = () => streamUrls(t.stack.gatewayUrl);

type Payload = { data?: { events: StreamedEvent } | null; errors?: { extensions?: Record<string, unknown> }[] };

/** A bare graphql-transport-ws client, so that the test can stop reading its socket (`pause`) and see every message and the close. */
async function rawWsSubscription(apiKey: string, variables: Record<string, unknown>, query = EVENTS_SUBSCRIPTION) {
  const socket = new WebSocket(urls().ws, 'graphql-transport-ws', { headers: { 'x-api-key': apiKey } });
  cleanups.push(() => socket.terminate());
  const payloads: Payload[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const acknowledged = new Promise<void>((resolve) =>
    socket.on('message', (raw) => {
      const message = JSON.parse(raw.toString()) as { type: string; payload?: unknown };
      if (message.type === 'connection_ack') resolve();
      if (message.type === 'next') payloads.push(message.payload as Payload);
      if (message.type === 'error') payloads.push({ errors: message.payload as Payload['errors'] });
    }),
  );
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init' }));
  await acknowledged;
  socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables } }));
  return { socket, payloads, closed };
}

describe('a slow consumer over WebSocket', () => {
  it('is ended, with SLOW_CONSUMER and its last cursor or a close naming it, when its client stops reading more than 1,000 events behind', async () => {
    const client = await t.newAccount('Slow socket');
    const start = await feedEndCursor(client);
    const ws = await rawWsSubscription(client.apiKey, { after: start });
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId), { timeout: 10_000, interval: 50 }).toBe(1);
    // The client stops reading: graphql-ws waits for the socket to take each message before it asks for the next.
    ws.socket.pause();
    const written: string[] = [];
    for (let round = 0; round < 3; round += 1) written.push(...(await ingestEvents(t.stack.config, client.accountId, 1000, 'x'.repeat(3000))));
    // Ended (its place given back) while the client still reads nothing.
    await expect.poll(() => openStreamPlaces(t.stack, client.apiKeyId), { timeout: 30_000, interval: 100 }).toBe(0);
    ws.socket.resume();
    const closedOrEnded = await Promise.race([
      ws.closed,
      expect.poll(() => ws.payloads.at(-1)?.errors, { timeout: 20_000, interval: 50 }).toBeDefined().then(() => undefined),
    ]);

    const delivered = ws.payloads.filter((payload) => payload.data).map((payload) => payload.data!.events);
    expect(written.length - delivered.length).toBeGreaterThan(1000);
    expect(new Set(written)).toEqual(new Set([...written, ...delivered.map((item) => item.event.id)]));
    if (closedOrEnded === undefined) {
      // The socket took the end message: the error names the last cursor delivered.
      expect(ws.payloads.at(-1)!.errors![0]!.extensions).toEqual({ code: 'SLOW_CONSUMER', cursor: delivered.at(-1)!.cursor });
    } else {
      // It did not: the close names it, after every item sent, the last of which is where to resume.
      expect(closedOrEnded).toMatchObject({ code: 4001, reason: expect.stringMatching(/^SLOW_CONSUMER/) });
    }
  }, 120_000);
});

describe('the per-key rate limit over WebSocket', () => {
  it('takes a token for each subscribe: more subscribe and complete pairs on one socket than the burst are refused TOO_MANY_REQUESTS, and the socket stays', async () => {
    const client = await t.newAccount('Subscribe loop');
    const gateway = await t.stack.anotherGateway({ config: { limits: { ...t.stack.config.limits, rateLimitPerSecond: 1, rateLimitBurst: 5 } } });
    cleanups.push(() => gateway.close());
    const socket = new WebSocket(streamUrls(gateway.url).ws, 'graphql-transport-ws', { headers: { 'x-api-key': client.apiKey } });
    cleanups.push(() => socket.terminate());
    const refusals = new Map<string, { message: string; extensions?: Record<string, unknown> }[]>();
    let closed = false;
    socket.once('close', () => (closed = true));
    const acknowledged = new Promise<void>((resolve) =>
      socket.on('message', (raw) => {
        const message = JSON.parse(raw.toString()) as { id?: string; type: string; payload?: unknown };
        if (message.type === 'connection_ack') resolve();
        if (message.type === 'error') refusals.set(message.id!, message.payload as { message: string }[]);
      }),
    );
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await acknowledged;

    const pairs = 12;
    const started = performance.now();
    for (let index = 0; index < pairs; index += 1) {
      const id = String(index);
      socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: EVENTS_SUBSCRIPTION } }));
      // A refusal comes back at once; an accepted stream says nothing until an event, and is completed after a moment.
      await expect.poll(() => refusals.has(id), { timeout: 100, interval: 10 }).toBe(true).catch(() => undefined);
      socket.send(JSON.stringify({ id, type: 'complete' }));
    }
    // The connect took one of the 5 tokens; while the pairs went by, one came back each second (a slow machine's loop takes longer).
    const refilled = Math.ceil((performance.now() - started) / 1_000);
    expect(refusals.size).toBeGreaterThanOrEqual(Math.max(1, pairs - 4 - refilled));
    for (const errors of refusals.values()) {
      expect(errors).toEqual([{ message: 'Too many requests', extensions: { code: 'TOO_MANY_REQUESTS', http: { status: 429 }, retryAfterSeconds: 1 } }]);
    }
    expect(closed).toBe(false);
  });
});

describe('the key store, looked at again after a change', () => {
  it('does not join a look-up begun before the change, which would answer with the key as it was', async () => {
    const client = await t.newAccount('Racing look-up');
    const db = createDatabase<AccountsDatabase>({ url: t.stack.databaseUrl, schema: ACCOUNTS_SCHEMA, applicationName: 'racing-look-up' });
    cleanups.push(() => db.destroy());
    const log = createLogger('racing-look-up', 'silent');
    const keyHash = hashApiKey(t.stack.config.apiKeyHmacSecret, client.apiKey);
    const asItWas = (await new ApiKeyStore({ db, redis: undefined, redisKeyPrefix: 'unused:', log }).lookup(keyHash)) as KeyRecord;
    const generationBefore = await readKeyCacheGeneration(db);

    // A Redis whose first read the test holds, and then answers with the record as it was, stamped with the generation it was read under.
    let answerFirstRead!: (raw: string | null) => void;
    let reads = 0;
    const redis = {
      get: () => (++reads === 1 ? new Promise<string | null>((resolve) => (answerFirstRead = resolve)) : Promise.resolve(null)),
      set: () => Promise.resolve('OK'),
      del: () => Promise.resolve(1),
      publish: () => Promise.resolve(0),
    } as unknown as Redis;
    const store = new ApiKeyStore({ db, redis, redisKeyPrefix: 'racing-look-up:', log });
    const begunBefore = store.lookup(keyHash);
    await expect.poll(() => reads).toBe(1);

    await revokeKey(t.stack.operator, { keyId: client.apiKeyId });
    await store.invalidate([], await readKeyCacheGeneration(db));
    // What a stream's check does on the change.
    const checkedAfter = store.lookup(keyHash);
    answerFirstRead(JSON.stringify({ g: generationBefore, r: asItWas }));
    expect((await begunBefore)?.revokedAt).toBeNull();
    expect((await checkedAfter)?.revokedAt).not.toBeNull();
  });
});

describe('the open streams of a key', () => {
  it('refuses every stream past the 10th with 429, when 12 open at once', async () => {
    const client = await t.newAccount('Twelve at once');
    const streams = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const stream = new RawSseStream();
        cleanups.push(() => stream.close());
        return stream.open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION);
      }),
    );
    const statuses = streams.map((stream) => stream.status).sort();
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
  });
});

describe("a stream's arguments", () => {
  /** The code the stream ends with, refused up front as listEvents refuses the same values (not an outage after the feed's timeout). */
  async function refusal(apiKey: string, variables: Record<string, unknown>): Promise<unknown> {
    const ws = await rawWsSubscription(apiKey, variables);
    await expect.poll(() => ws.payloads.length, { timeout: 15_000, interval: 20 }).toBeGreaterThan(0);
    return ws.payloads[0]!.errors?.[0]?.extensions?.code;
  }

  it('are refused with BAD_USER_INPUT when listEvents refuses them: a loose or impossible date-time, an unknown type, a cursor longer than any', async () => {
    const client = await t.newAccount('Stream arguments');
    for (const occurredAfter of ['1', '2026-02-31T00:00:00Z', '2026-11-21T14:03:07']) {
      const listed = await topLevelError(t.stack, client, 'query ($occurredAfter: DateTime) { listEvents(first: 1, filter: { occurredAfter: $occurredAfter }) { nodes { id } } }', { occurredAfter });
      expect(listed.extensions.code).toBe('BAD_USER_INPUT');
      expect(await refusal(client.apiKey, { filter: { occurredAfter } })).toBe('BAD_USER_INPUT');
    }
    expect(await refusal(client.apiKey, { filter: { types: ['fill.recorded', 'no.such_type'] } })).toBe('BAD_USER_INPUT');
    expect(await refusal(client.apiKey, { after: 'c'.repeat(300) })).toBe('BAD_USER_INPUT');
  });

  it('may name a type more often than the feed route takes types, and the stream delivers it', async () => {
    const client = await t.newAccount('Repeated types');
    const start = await feedEndCursor(client);
    const ws = await rawWsSubscription(client.apiKey, { after: start, filter: { types: Array(25).fill('strategy.created') } });
    const [written] = await ingestEvents(t.stack.config, client.accountId, 1);
    await expect.poll(() => ws.payloads.map((payload) => payload.data?.events.event.id ?? payload.errors), { timeout: 10_000 }).toEqual([written]);
  });
});

describe('a subscription whose root field is conditional', () => {
  const SKIPPED = 'subscription { events @skip(if: true) { cursor } }';
  const INCLUDED_IF = 'subscription ($on: Boolean!) { ...Root } fragment Root on Subscription { events @include(if: $on) { cursor } }';

  it('is refused with BAD_REQUEST over WebSocket and SSE, and takes none of the key\'s places', async () => {
    const client = await t.newAccount('Conditional root');
    for (const [query, variables] of [[SKIPPED, {}], [INCLUDED_IF, { on: false }]] as const) {
      const ws = await rawWsSubscription(client.apiKey, variables, query);
      await expect.poll(() => ws.payloads.length, { timeout: 15_000, interval: 20 }).toBeGreaterThan(0);
      expect(ws.payloads[0]!.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
      const sse = new RawSseStream();
      cleanups.push(() => sse.close());
      await sse.open(urls().sse, client.apiKey, query, variables);
      expect(sse.status).toBe(400);
    }
    expect(await openStreamPlaces(t.stack, client.apiKeyId)).toBe(0);
    // Ten streams still open for the key.
    const streams = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const stream = new RawSseStream();
        cleanups.push(() => stream.close());
        return stream.open(urls().sse, client.apiKey, EVENTS_SUBSCRIPTION);
      }),
    );
    expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
  });
});
