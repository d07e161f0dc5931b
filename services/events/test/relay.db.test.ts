import { createServer } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { createLogger } from '@ots/shared/logger';
import { newId, type Uuid } from '@ots/shared/ids';
import { loadConfig } from '@ots/shared/config';
import { INGEST_PATH } from '@ots/shared/contracts/internal-routes';
import {
  createOutboxTable,
  EventsUnavailableError,
  recordEvent,
  relayOutboxOnce,
  startOutboxRelay,
  type OutboxDatabase,
  type OutboxRelayOptions,
} from '@ots/shared/outbox';
import { registerIngestRoute } from '../src/ingest.ts';
import { useEventsDatabase } from './support/fixtures.ts';

const { db: events, url } = await useEventsDatabase();
let producer: Kysely<OutboxDatabase>;
let close: () => Promise<void>;
let app: FastifyInstance;
let eventsUrl: string;
const secret = loadConfig({ NODE_ENV: 'test' }).eventsIngestSecret!;
const log = createLogger('relay-test', 'silent');
const accountId = '01936f0e-0000-7000-8000-00000000000a';

beforeAll(async () => {
  producer = createDatabase<OutboxDatabase>({ url, schema: 'producer', applicationName: 'producer-test' });
  await producer.schema.createSchema('producer').ifNotExists().execute();
  await createOutboxTable(producer as unknown as Kysely<unknown>);
  app = Fastify();
  await registerIngestRoute(app, { db: events, secret, now: () => new Date(), onQueued: () => undefined });
  await app.listen({ port: 0, host: '127.0.0.1' });
  eventsUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/graphql`;
  close = async () => {
    await app.close();
    await producer.destroy();
  };
});
afterAll(async () => {
  await close();
});
beforeEach(async () => {
  await producer.deleteFrom('outbox').execute();
});

const relay = (overrides: Partial<OutboxRelayOptions> = {}): OutboxRelayOptions => ({
  service: 'strategies',
  db: producer,
  url: () => new URL(INGEST_PATH, eventsUrl),
  secret,
  log,
  intervalMs: 50,
  ...overrides,
});

// An outbox row's id becomes its event's id.
const outboxIds = async () => (await producer.selectFrom('outbox').select('id').orderBy('id').execute()).map((row) => row.id as Uuid);
const storedCount = async (ids: Uuid[]) =>
  ids.length === 0 ? 0 : (await events.selectFrom('events').select('id').where('id', 'in', ids).execute()).length;

async function writeChange(commit: boolean, name: string): Promise<void> {
  await producer
    .transaction()
    .execute(async (trx) => {
      await recordEvent(trx, { accountId, type: 'strategy.created', occurredAt: new Date(), data: { id: newId(), name } });
      if (!commit) throw new Error('rolled back');
    })
    .catch((error: Error) => {
      if (error.message !== 'rolled back') throw error;
    });
}

describe('the outbox and its relay', () => {
  it('an event lives and dies with its transaction; the relay forwards committed ones and empties the outbox', async () => {
    await writeChange(false, 'rolled back');
    await writeChange(true, 'committed');
    const ids = await outboxIds();
    expect(ids).toHaveLength(1);
    expect(await relayOutboxOnce(relay())).toBe(1);
    expect(await outboxIds()).toEqual([]);
    const [stored] = await events.selectFrom('events').selectAll().where('id', '=', ids[0]!).execute();
    expect(stored).toMatchObject({ account_id: accountId, type: 'strategy.created', data: { name: 'committed' } });
  });

  it('stores the data of each event exactly as it was written, whatever its text holds, several events to a batch', async () => {
    const awkward = [
      { id: newId(), name: 'quote " backslash \\ slash / tab \t newline \n', note: null },
      { id: newId(), name: 'naïve € 日本 \u{1F4C8}', amounts: ['1.50', '0.0000000001', '12345678901234567890'], nested: { list: [1, 2.5, -3e-7], flag: true } },
      { id: newId(), name: '', empty: {}, none: [] },
    ];
    for (const data of awkward) {
      await producer.transaction().execute((trx) => recordEvent(trx, { accountId, type: 'strategy.updated', occurredAt: new Date('2026-11-21T14:03:07.120Z'), data }));
    }
    const ids = await outboxIds();
    expect(await relayOutboxOnce(relay())).toBe(3);
    const stored = await events.selectFrom('events').select(['id', 'type', 'occurred_at', 'data']).where('id', 'in', ids).orderBy('id').execute();
    expect(stored).toEqual(awkward.map((data, index) => ({ id: ids[index], type: 'strategy.updated', occurred_at: new Date('2026-11-21T14:03:07.120Z'), data })));
  });

  it("a consumer's held relay leaves the rows younger than its hold, the request's own to deliver, and forwards them once older", async () => {
    await writeChange(true, 'kept by its request');
    const ids = await outboxIds();
    // A hold a loaded machine cannot outrun between the write and the first pass.
    expect(await relayOutboxOnce(relay({ holdMs: 3_000 }))).toBe(0);
    expect(await outboxIds()).toEqual(ids);
    await new Promise((resolve) => setTimeout(resolve, 3_050));
    expect(await relayOutboxOnce(relay({ holdMs: 3_000 }))).toBe(1);
    expect(await outboxIds()).toEqual([]);
    expect(await storedCount(ids)).toBe(1);
  });

  it('keeps the rows while events is down or refuses the signature, and forwards them later', async () => {
    await writeChange(true, 'waiting');
    const ids = await outboxIds();
    await expect(relayOutboxOnce(relay({ url: () => new URL(INGEST_PATH, 'http://127.0.0.1:1/graphql') }))).rejects.toBeInstanceOf(EventsUnavailableError);
    await expect(relayOutboxOnce(relay({ secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}` }))).rejects.toThrow(/HTTP 401/);
    expect(await outboxIds()).toEqual(ids);
    expect(await storedCount(ids)).toBe(0);
    expect(await relayOutboxOnce(relay())).toBe(1);
    expect(await storedCount(ids)).toBe(1);
  });

  it('a relay that crashed after events stored its batch but before deleting it sends again: one copy, one delivery each', async () => {
    await events.insertInto('webhook_endpoints').values({
      id: newId(), account_id: accountId, url: 'https://example.com/h', event_types: [], description: null, status: 'ENABLED',
      disabled_reason: null, secret, previous_secret: null, previous_secret_expires_at: null, failing_since: null, last_failed_at: null,
      created_at: new Date(), updated_at: new Date(),
    }).execute();
    await writeChange(true, 'twice');
    const rows = await producer.selectFrom('outbox').selectAll().execute();
    expect(await relayOutboxOnce(relay())).toBe(1);
    // The delete "did not happen": the same rows are back.
    await producer.insertInto('outbox').values(rows.map((row) => ({ ...row, data: JSON.stringify(row.data) }))).execute();
    expect(await relayOutboxOnce(relay())).toBe(1);
    const ids = rows.map((row) => row.id as Uuid);
    expect(await storedCount(ids)).toBe(1);
    const messages = await events.selectFrom('webhook_messages').select('id').where('event_id', 'in', ids).execute();
    expect(messages).toHaveLength(1);
  });

  it('backs off while events answers errors instead of hammering it, then resumes', async () => {
    let calls = 0;
    const down = createServer((_request, response) => {
      calls += 1;
      response.writeHead(503).end();
    });
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    const downUrl = `http://127.0.0.1:${(down.address() as { port: number }).port}/graphql`;
    let url = downUrl;
    await writeChange(true, 'backoff');
    const loop = startOutboxRelay(relay({ url: () => new URL(INGEST_PATH, url) }));
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    // Without back-off a 50 ms interval would have called about 32 times.
    expect(calls).toBeGreaterThanOrEqual(3);
    expect(calls).toBeLessThanOrEqual(8);
    url = eventsUrl;
    const deadline = Date.now() + 10_000;
    while ((await outboxIds()).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await outboxIds()).toEqual([]);
    await loop.stop();
    await new Promise<void>((resolve) => down.close(() => resolve()));
  });
});
