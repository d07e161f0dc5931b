import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deleteExpiredEvents } from '../src/dispatcher.ts';
import { RETENTION_MS } from '../src/domain.ts';
import { createEndpoint } from '../src/operations.ts';
import { findEventsByIds, ingestEvents, listEvents } from '../src/repository.ts';
import { ingest, strategyEvent, secretKey, useEventsDatabase } from './support/fixtures.ts';
import { positionOf, type FeedPosition } from '@ots/shared/commit-order';
import { testScope } from '@ots/shared/testing/scope';

const { db } = await useEventsDatabase();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the feed', () => {
  it('misses nothing and repeats nothing while concurrent writers commit out of order, some slowly', async () => {
    const accountId = randomUUID();
    const committed = new Set<string>();
    let writing = true;

    // Each writer's events get their ids (time-ordered) before a transaction that may take a while
    // to commit: an id- or time-ordered reader would page past them.
    const writer = async (slowEvery: number) => {
      for (let round = 0; round < 25; round += 1) {
        const events = Array.from({ length: 1 + (round % 3) }, () => strategyEvent(accountId, new Date()));
        await db.transaction().execute(async (trx) => {
          await ingestEvents(trx, JSON.stringify({ events }), new Date());
          await sleep(round % slowEvery === 0 ? 120 : Math.random() * 10);
        });
        for (const event of events) committed.add(event.id);
      }
    };

    const seen: string[] = [];
    // Pages forward from its last cursor until it has seen every committed event: a row held back
    // (by a transaction still running anywhere on the server) must show up later, ahead of the cursor.
    const reader = async () => {
      let after: FeedPosition | undefined;
      const deadline = Date.now() + 20_000;
      while ((writing || new Set(seen).size < committed.size) && Date.now() < deadline) {
        const page = await listEvents(db, accountId, { types: undefined, occurredAfter: undefined, after, limit: 7 });
        seen.push(...page.map((row) => row.id));
        if (page.length > 0) after = positionOf(page.at(-1)!);
        await sleep(3);
      }
    };

    const reading = reader();
    await Promise.all([writer(4), writer(5), writer(7), writer(3)]);
    writing = false;
    await reading;

    expect(committed.size).toBeGreaterThan(150);
    expect(new Set(seen).size).toBe(seen.length);
    expect(new Set(seen)).toEqual(committed);
  });

  it('scopes every page to the account', async () => {
    const a = randomUUID();
    const b = randomUUID();
    await ingest(db, [strategyEvent(a, new Date()), strategyEvent(b, new Date())], new Date());
    const deadline = Date.now() + 30_000;
    let pageA = await listEvents(db, a, { types: undefined, occurredAfter: undefined, after: undefined, limit: 50 });
    // The rows appear once every transaction older than theirs, anywhere on the server, has ended.
    while (pageA.length === 0 && Date.now() < deadline) {
      await sleep(20);
      pageA = await listEvents(db, a, { types: undefined, occurredAfter: undefined, after: undefined, limit: 50 });
    }
    expect(pageA.map((row) => row.account_id)).toEqual([a]);
  });
});

describe('retention', () => {
  it('the clean-up deletes events older than 30 days with their deliveries, and keeps the rest', async () => {
    const accountId = randomUUID();
    const now = new Date();
    const created = await createEndpoint({ ...testScope(db, accountId), production: false, now: () => now, secretKey }, { url: 'https://example.com/hooks' });
    expect(created.ok).toBe(true);
    const old = strategyEvent(accountId, new Date(now.getTime() - RETENTION_MS - 60_000));
    const recent = strategyEvent(accountId, new Date(now.getTime() - RETENTION_MS + 60_000));
    await ingest(db, [old, recent], now);
    // Not shown even before the clean-up has run.
    expect((await findEventsByIds(db, accountId, [old.id, recent.id])).map((row) => row.id)).toEqual([recent.id]);
    expect(await deleteExpiredEvents(db, now)).toBeGreaterThanOrEqual(1);
    const left = await db.selectFrom('events').select('id').where('account_id', '=', accountId).execute();
    expect(left.map((row) => row.id)).toEqual([recent.id]);
    const messages = await db.selectFrom('webhook_messages').select('event_id').where('account_id', '=', accountId).execute();
    expect(messages.map((row) => row.event_id)).toEqual([recent.id]);
    // Nothing to do on a second run.
    expect(await deleteExpiredEvents(db, now)).toBe(0);
  });
});
