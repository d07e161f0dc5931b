import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { compiledStatement } from '../src/compiled-statement.ts';
import { useSchemaDatabase } from '../src/testing/database.ts';

interface NotesDatabase {
  notes: { account_id: string; id: number; body: string; tags: string[]; written_at: Date | null };
}

const SCHEMA = 'compiled_statement_test';
const { db } = await useSchemaDatabase<NotesDatabase>(
  {
    schema: SCHEMA,
    migrations: {
      '001_notes': {
        up: async (migrationDb) => {
          await sql`create table ${sql.table(`${SCHEMA}.notes`)} (
            account_id text not null, id int not null, body text not null, tags text[] not null, written_at timestamptz,
            primary key (account_id, id))`.execute(migrationDb);
        },
      },
    },
  },
  { applicationName: 'compiled-statement-test', maxConnections: 4 },
);

const insertNote = compiledStatement(
  (db: Kysely<NotesDatabase>, p: { accountId: string; id: number; body: string; tags: readonly string[]; writtenAt: Date | null }) =>
    db
      .insertInto('notes')
      .values({ account_id: p.accountId, id: p.id, body: p.body, tags: sql<string[]>`${p.tags}::text[]`, written_at: p.writtenAt })
      .returningAll(),
);

const notesOf = compiledStatement((db: Kysely<NotesDatabase>, p: { accountId: string; ids: readonly string[] }) =>
  db
    .selectFrom('notes')
    .selectAll()
    // A constant of the query stays in place among the bound values.
    .where('body', '<>', 'never written')
    .where('account_id', '=', p.accountId)
    .where(sql<boolean>`id::text = any(${p.ids}::text[])`)
    .orderBy('id'),
);

describe('a compiled statement', () => {
  it('binds each call its own values, constants of the query included, in one shape of SQL', async () => {
    const writtenAt = new Date('2026-11-21T14:03:07.120Z');
    const [first] = await insertNote(db, { accountId: 'a', id: 1, body: 'one', tags: ['x', 'y'], writtenAt });
    expect(first).toEqual({ account_id: 'a', id: 1, body: 'one', tags: ['x', 'y'], written_at: writtenAt });
    await insertNote(db, { accountId: 'a', id: 2, body: 'two', tags: [], writtenAt: null });
    await insertNote(db, { accountId: 'b', id: 1, body: 'other account', tags: [], writtenAt: null });

    const rows = await notesOf(db, { accountId: 'a', ids: ['1', '2', '3'] });
    expect(rows.map((row) => [row.account_id, row.id, row.body, row.written_at])).toEqual([
      ['a', 1, 'one', writtenAt],
      ['a', 2, 'two', null],
    ]);
    expect(await notesOf(db, { accountId: 'b', ids: ['1'] })).toEqual([expect.objectContaining({ account_id: 'b', body: 'other account' })]);
  });

  it('runs in a transaction given as its database', async () => {
    await expect(
      db.transaction().execute(async (trx) => {
        await insertNote(trx, { accountId: 'c', id: 1, body: 'rolled back', tags: [], writtenAt: null });
        expect(await notesOf(trx, { accountId: 'c', ids: ['1'] })).toHaveLength(1);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await notesOf(db, { accountId: 'c', ids: ['1'] })).toEqual([]);
  });

  it('refuses a build that computes with a parameter instead of passing it on', async () => {
    const formatted = compiledStatement((db: Kysely<NotesDatabase>, p: { body: string }) =>
      db.selectFrom('notes').selectAll().where('body', '=', `${p.body}!`),
    );
    await expect(formatted(db, { body: 'one' })).rejects.toThrow('parameter "body" was computed on while the statement was built');
    // An object's fields would be read off its placeholder (undefined), so the types refuse one.
    // @ts-expect-error: a parameter holds one value, not an object
    compiledStatement((db: Kysely<NotesDatabase>, p: { note: { body: string } }) => db.selectFrom('notes').selectAll().where('body', '=', p.note.body));
  });
});

describe('a prepared compiled statement', () => {
  const writtenNote = compiledStatement(
    (db: Kysely<NotesDatabase>, p: { accountId: string; id: number }) =>
      db.selectFrom('notes').select(['account_id', 'id', 'body']).where('account_id', '=', p.accountId).where('id', '=', p.id),
    { prepared: true },
  );

  it('is sent by name: the connection parses it once and keeps it', async () => {
    await insertNote(db, { accountId: 'p', id: 1, body: 'prepared', tags: [], writtenAt: null });
    const prepared = await db.connection().execute(async (connection) => {
      for (let run = 0; run < 3; run += 1) expect(await writtenNote(connection, { accountId: 'p', id: 1 })).toEqual([{ account_id: 'p', id: 1, body: 'prepared' }]);
      const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(connection);
      return rows.map((row) => row.statement);
    });
    expect(prepared).toEqual([expect.stringMatching(/^select "account_id", "id", "body" from "notes"/)]);
  });

  it('keeps answering after a column is added to its table, since it names its columns', async () => {
    await db.connection().execute(async (connection) => {
      expect(await writtenNote(connection, { accountId: 'p', id: 1 })).toHaveLength(1);
      await sql`alter table notes add column mood text`.execute(connection);
      expect(await writtenNote(connection, { accountId: 'p', id: 1 })).toEqual([{ account_id: 'p', id: 1, body: 'prepared' }]);
    });
  });

  it('is refused when it selects or returns *, which Postgres would refuse to re-plan once a column is added', async () => {
    const everyColumn = compiledStatement((db: Kysely<NotesDatabase>, p: { id: number }) => db.selectFrom('notes').selectAll().where('id', '=', p.id), {
      prepared: true,
    });
    await expect(everyColumn(db, { id: 1 })).rejects.toThrow('a prepared statement names its columns, not *');
    const returningEvery = compiledStatement((db: Kysely<NotesDatabase>, p: { id: number }) => db.deleteFrom('notes').where('id', '=', p.id).returningAll(), {
      prepared: true,
    });
    await expect(returningEvery(db, { id: -1 })).rejects.toThrow('a prepared statement names its columns, not *');
  });
});
