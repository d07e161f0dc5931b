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
      const migrating = migrateSchema(database.url, 'migrate_schema_test', migrations);
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
