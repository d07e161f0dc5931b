import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrateSchema } from '../src/db.ts';
import { createTestDatabase } from '../src/testing/database.ts';

const database = await createTestDatabase();
afterAll(() => database.drop());

describe('migrateSchema', () => {
  it("runs a migration without the requests' 5 s statement limit, and waits for another runner's lock however long it holds it", async () => {
    const seen: string[] = [];
    const migrations = {
      '001_slow': {
        up: async (db: Kysely<unknown>) => {
          const { rows } = await sql<{ limit: string }>`select current_setting('statement_timeout') as limit`.execute(db);
          seen.push(rows[0]!.limit);
        },
      },
    };
    // A database whose own default is a statement limit: a migration must not inherit it either.
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query(`alter database ${new URL(database.url).pathname.slice(1)} set statement_timeout = '1s'`);
    await admin.end();
    // Another runner holds the migration lock (Kysely's, one id for every schema) for longer than a request's statement may run.
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query('select pg_advisory_lock(3853314791062309107)');
      const migrating = migrateSchema(database.url, { schema: 'migrate_schema_test', migrations });
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      expect(seen).toEqual([]);
      await other.query('select pg_advisory_unlock(3853314791062309107)');
      await migrating;
    } finally {
      await other.end();
    }
    expect(seen).toEqual(['0']);
  }, 20_000);
});

describe('online indexes', () => {
  const schema = 'online_index_test';
  const migrations = {
    '001_table': { up: async (db: Kysely<unknown>) => void (await sql`create table ${sql.id(schema, 'fills')} (id serial primary key, symbol text not null)`.execute(db)) },
  };
  const onlineIndexes = [{ name: 'fills_symbol', table: 'fills', columns: ['symbol'] }];

  async function client(): Promise<pg.Client> {
    const connected = new pg.Client({ connectionString: database.url });
    await connected.connect();
    return connected;
  }

  async function indexState(session: pg.Client): Promise<{ valid: boolean; unique: boolean } | undefined> {
    const { rows } = await session.query(
      `select i.indisvalid as valid, i.indisunique as unique from pg_index i join pg_class c on c.oid = i.indexrelid
       join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relname = 'fills_symbol'`,
      [schema],
    );
    return rows[0];
  }

  /** Until the index build waits for the transaction `open` holds. */
  async function untilBuildWaits(session: pg.Client): Promise<void> {
    await expect
      .poll(async () => (await session.query("select count(*)::int as n from pg_stat_activity where query ilike 'create index%' and wait_event_type = 'Lock'")).rows[0].n, { timeout: 20_000 })
      .toBe(1);
  }

  it('are built while writes to the table go on, even behind a transaction that holds it open', { timeout: 30_000 }, async () => {
    await migrateSchema(database.url, { schema, migrations });
    const [open, writer] = [await client(), await client()];
    try {
      // A plain CREATE INDEX would wait for this transaction, and every insert would queue behind it.
      await open.query('begin');
      await open.query(`insert into ${schema}.fills (symbol) values ('OPEN')`);
      const building = migrateSchema(database.url, { schema, migrations, onlineIndexes });
      await untilBuildWaits(writer);
      await writer.query("set statement_timeout = '2s'");
      await writer.query(`insert into ${schema}.fills (symbol) values ('DURING')`);
      await open.query('commit');
      await building;
      expect(await indexState(writer)).toEqual({ valid: true, unique: false });
    } finally {
      await open.end();
      await writer.end();
    }
  });

  it('are built by one of two runners at once, the other waiting for it without failing its build', { timeout: 30_000 }, async () => {
    const [open, session] = [await client(), await client()];
    try {
      await session.query(`drop index if exists ${schema}.fills_symbol`);
      // The first runner's build waits for this transaction; the second runner arrives meanwhile.
      await open.query('begin');
      await open.query(`insert into ${schema}.fills (symbol) values ('HELD')`);
      const first = migrateSchema(database.url, { schema, migrations, onlineIndexes });
      await untilBuildWaits(session);
      const second = migrateSchema(database.url, { schema, migrations, onlineIndexes });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await open.query('commit');
      await Promise.all([first, second]);
      expect(await indexState(session)).toEqual({ valid: true, unique: false });
    } finally {
      await open.end();
      await session.end();
    }
  });

  it('are built again when a build cut short left one invalid', { timeout: 30_000 }, async () => {
    const session = await client();
    try {
      await session.query(`drop index if exists ${schema}.fills_symbol`);
      // A failed concurrent build leaves its index behind, invalid: here, unique over duplicates.
      await session.query(`insert into ${schema}.fills (symbol) values ('TWICE'), ('TWICE')`);
      await expect(session.query(`create unique index concurrently fills_symbol on ${schema}.fills (symbol)`)).rejects.toThrow();
      expect(await indexState(session)).toEqual({ valid: false, unique: true });
      await migrateSchema(database.url, { schema, migrations, onlineIndexes });
      expect(await indexState(session)).toEqual({ valid: true, unique: false });
      // Built and valid: a further run leaves it as it is.
      await migrateSchema(database.url, { schema, migrations, onlineIndexes });
      expect(await indexState(session)).toEqual({ valid: true, unique: false });
    } finally {
      await session.end();
    }
  });
});
