import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import {
  addCommitOrder,
  aheadInCommitOrder,
  feedEndAt,
  inCommitOrder,
  positionOf,
  type FeedPosition,
} from '../src/commit-order.ts';
import { newId } from '../src/ids.ts';
import { useSchemaDatabase } from '../src/testing/database.ts';

interface FeedDatabase {
  items: { id: string; account_id: string; version: number; commit_xid: string };
}

const SCHEMA = 'feed_test';
const { db } = await useSchemaDatabase<FeedDatabase>(
  {
    schema: SCHEMA,
    migrations: {
      '001_items': {
        up: async (migrationDb) => {
          await sql`create table ${sql.table(`${SCHEMA}.items`)} (id uuid primary key, account_id uuid not null, version int not null)`.execute(
            migrationDb,
          );
          await addCommitOrder(migrationDb, { schema: SCHEMA, table: 'items', scope: ['account_id'] });
        },
      },
    },
  },
  { applicationName: 'commit-order-test', maxConnections: 20 },
);

async function page(accountId: string, after: FeedPosition | undefined, limit = 100) {
  const rows = await inCommitOrder(db.selectFrom('items').selectAll().where('account_id', '=', accountId), { after, limit }).execute();
  return { rows, end: rows.length > 0 ? positionOf(rows.at(-1)!) : after };
}

async function insert(accountId: string, executor: Kysely<FeedDatabase> = db): Promise<string> {
  const id = newId();
  await executor.insertInto('items').values({ id, account_id: accountId, version: 1 } as never).execute();
  return id;
}

async function bump(id: string, executor: Kysely<FeedDatabase> = db): Promise<void> {
  await executor.updateTable('items').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', id).execute();
}

/** Runs `body` in a transaction that stays open until the returned `commit` is called. */
function heldTransaction(body: (trx: Kysely<FeedDatabase>) => Promise<void>) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  const done = db.transaction().execute(async (trx) => {
    await body(trx);
    started();
    await released;
  });
  return {
    ready,
    commit: async () => {
      release();
      await done;
    },
  };
}

describe('commit-ordered feed', () => {
  it('marks the rows the horizon holds back, after every row it may hand out, until the transaction before them ends', async () => {
    const accountId = newId();
    const before = await insert(accountId);
    // An unrelated write, on another account, left open: it holds back everything committed after it began.
    const blocker = heldTransaction(async (trx) => void (await insert(newId(), trx)));
    await blocker.ready;
    const later = await insert(accountId);
    const ahead = () =>
      aheadInCommitOrder(db.selectFrom('items').select(['id', 'commit_xid']).where('account_id', '=', accountId), { after: feedEndAt('0'), limit: 10 }).execute();

    const held = await ahead();
    expect(held.map((row) => row.id)).toEqual([before, later]);
    expect(held[1]!.held_back).toBe(true);
    // The rows a reader may have come first: once one is held back, so is every one after it.
    expect(held.map((row) => row.held_back)).toEqual([...held.map((row) => row.held_back)].sort());
    const { rows } = await page(accountId, undefined);
    expect(rows.map((row) => row.id)).not.toContain(later);

    await blocker.commit();
    // Other transactions of the server may hold the horizon a moment longer.
    await expect.poll(async () => (await ahead()).map((row) => [row.id, row.held_back])).toEqual([
      [before, false],
      [later, false],
    ]);
  });

  it('pages rows in commit order, and an updated row moves to the end', async () => {
    const account = newId();
    const first = await insert(account);
    const second = await insert(account);
    await expect.poll(async () => (await page(account, undefined)).rows.length).toBe(2);
    const one = await page(account, undefined, 1);
    expect(one.rows.map((row) => row.id)).toEqual([first]);
    await bump(first);
    let rest = await page(account, one.end);
    await expect
      .poll(async () => (rest = await page(account, one.end)).rows.map((row) => [row.id, row.version]))
      .toEqual([
        [second, 1],
        [first, 2],
      ]);
    expect((await page(account, rest.end)).rows).toEqual([]);
  });

  it('scopes by the query it is given: another account’s rows never show', async () => {
    const mine = newId();
    const theirs = newId();
    await insert(theirs);
    const id = await insert(mine);
    await expect.poll(async () => (await page(mine, undefined)).rows.map((row) => row.id)).toEqual([id]);
  });

  it('holds back rows committed after a transaction still in flight, then hands out both ahead of the cursor', async () => {
    const account = newId();
    const before = await insert(account);
    let slowId = '';
    const slow = heldTransaction(async (trx) => {
      slowId = await insert(account, trx);
    });
    await slow.ready;
    const fast = await insert(account);
    // The fast row committed, but below it a transaction is still open: handing it out now would
    // let the slow row appear behind the cursor later. (`before` may take a moment: the horizon
    // is the server's, and other tests write too.)
    let seen = await page(account, undefined);
    await expect.poll(async () => (seen = await page(account, undefined)).rows.map((row) => row.id)).toEqual([before]);
    await slow.commit();
    await expect.poll(async () => (await page(account, seen.end)).rows.map((row) => row.id)).toEqual([slowId, fast]);
  });

  it('a rolled-back transaction leaves nothing and stops holding the feed back', async () => {
    const account = newId();
    const aborted = db.transaction().execute(async (trx) => {
      await insert(account, trx);
      throw new Error('roll back');
    });
    await expect(aborted).rejects.toThrow('roll back');
    const kept = await insert(account);
    await expect.poll(async () => (await page(account, undefined)).rows.map((row) => row.id)).toEqual([kept]);
  });

  it('a reader syncing while many writers insert and update with delays inside their transactions ends with exactly the final state, each row’s versions in order', async () => {
    const account = newId();
    const ids: string[] = [];
    for (let index = 0; index < 20; index += 1) ids.push(await insert(account));
    const pause = () => new Promise((resolve) => setTimeout(resolve, Math.random() * 15));
    let writing = true;
    const writers = Array.from({ length: 8 }, async () => {
      for (let step = 0; step < 25; step += 1) {
        await db.transaction().execute(async (trx) => {
          await pause();
          if (Math.random() < 0.3) {
            ids.push(await insert(account, trx));
          } else {
            const id = ids[Math.floor(Math.random() * ids.length)]!;
            await trx.selectFrom('items').select('id').where('id', '=', id).forUpdate().execute();
            await pause();
            await bump(id, trx);
          }
          await pause();
        });
      }
    });
    const latest = new Map<string, number>();
    let cursor: FeedPosition | undefined;
    const sync = async () => {
      for (;;) {
        const { rows, end } = await page(account, cursor, 7);
        for (const row of rows) {
          const previous = latest.get(row.id) ?? 0;
          // A row comes again only when it changed: never an older or the same version twice.
          expect(row.version).toBeGreaterThan(previous);
          latest.set(row.id, row.version);
        }
        cursor = end;
        if (rows.length < 7) return;
      }
    };
    const reader = (async () => {
      while (writing) {
        await sync();
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
    })();
    try {
      await Promise.all(writers);
    } finally {
      writing = false;
      await reader;
    }
    const final = await db.selectFrom('items').select(['id', 'version']).where('account_id', '=', account).execute();
    expect(final.length).toBeGreaterThan(20);
    // Syncing on until the horizon has passed the last write: other tests share the server, and
    // their transactions in flight hold it back for a moment.
    await expect.poll(async () => (await sync(), new Map(latest))).toEqual(new Map(final.map((row) => [row.id, row.version])));
  });

  it('uses the (scope, xid, id) index', async () => {
    const account = newId();
    const compiled = inCommitOrder(db.selectFrom('items').selectAll().where('account_id', '=', account), {
      after: { xid: '1', id: newId() },
      limit: 5,
    }).compile();
    await sql`set enable_seqscan = off`.execute(db);
    const plan = await sql.raw<{ 'QUERY PLAN': string }>(`explain ${compiled.sql.replace(/\$(\d+)/g, (_, n) => `'${String(compiled.parameters[Number(n) - 1])}'`)}`).execute(db);
    await sql`reset enable_seqscan`.execute(db);
    expect(plan.rows.map((row) => row['QUERY PLAN']).join('\n')).toContain('items_account_id_commit_order');
  });
});
