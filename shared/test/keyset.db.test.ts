import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { cursorTag, decodeKeysetCursor, encodeKeysetCursor, inKeysetOrder, type KeysetPosition } from '../src/pagination.ts';
import { useSchemaDatabase } from '../src/testing/database.ts';

interface ListDatabase {
  items: { id: string; account_id: string; created_at: Date };
}

const SCHEMA = 'keyset_test';
const ORDERING = cursorTag('items', 'CREATED_AT_DESC');
const { db } = await useSchemaDatabase<ListDatabase>(
  {
    schema: SCHEMA,
    migrations: {
      '001_items': {
        up: async (migrationDb) => {
          await sql`create table ${sql.table(`${SCHEMA}.items`)} (id uuid primary key, account_id uuid not null, created_at timestamptz(3) not null)`.execute(
            migrationDb,
          );
          await sql`create index items_account_id_created_at on ${sql.table(`${SCHEMA}.items`)} (account_id, created_at, id)`.execute(migrationDb);
        },
      },
    },
  },
  { applicationName: 'keyset-test', maxConnections: 4 },
);

async function page(accountId: string, after: KeysetPosition | undefined, limit: number) {
  return inKeysetOrder(db.selectFrom('items').selectAll().where('account_id', '=', accountId), { time: 'created_at', after, limit }).execute();
}

describe('inKeysetOrder: newest first by (time, id), from a cursor', () => {
  it('pages through every row once, newest first, ties broken by id, across equal times', async () => {
    const accountId = newId();
    const other = newId();
    const base = Date.parse('2026-11-21T14:00:00.000Z');
    // Three rows per millisecond, so that pages end in the middle of a tie.
    const rows = Array.from({ length: 12 }, (_, i) => ({ id: newId(), account_id: accountId, created_at: new Date(base + Math.floor(i / 3)) }));
    await db.insertInto('items').values(rows).execute();
    await db.insertInto('items').values({ id: newId(), account_id: other, created_at: new Date(base) }).execute();

    const seen: string[] = [];
    let after: KeysetPosition | undefined;
    for (;;) {
      const got = await page(accountId, after, 5);
      seen.push(...got.map((row) => row.id));
      if (got.length < 5) break;
      const last = got.at(-1)!;
      after = decodeKeysetCursor(ORDERING, encodeKeysetCursor(ORDERING, { at: last.created_at, id: last.id }));
    }
    const expected = [...rows].sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : -1)).map((row) => row.id);
    expect(seen).toEqual(expected);
  });

  it('reads the page through the (account_id, time, id) index', async () => {
    const compiled = inKeysetOrder(db.selectFrom('items').selectAll().where('account_id', '=', newId()), {
      time: 'created_at',
      after: decodeKeysetCursor(ORDERING, encodeKeysetCursor(ORDERING, { at: new Date(), id: newId() })),
      limit: 5,
    }).compile();
    await sql`set enable_seqscan = off`.execute(db);
    const plan = await sql
      .raw<{ 'QUERY PLAN': string }>(`explain ${compiled.sql.replace(/\$(\d+)/g, (_, n) => `'${String(compiled.parameters[Number(n) - 1] instanceof Date ? (compiled.parameters[Number(n) - 1] as Date).toISOString() : compiled.parameters[Number(n) - 1])}'`)}`)
      .execute(db);
    await sql`reset enable_seqscan`.execute(db);
    expect(plan.rows.map((row) => row['QUERY PLAN']).join('\n')).toContain('items_account_id_created_at');
  });
});
