import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { newId, receiveId } from '@ots/shared/ids';
import { migrateService } from '@ots/shared/service';
import { testScope } from '@ots/shared/testing/scope';
import { createTestDatabase } from '@ots/shared/testing/database';
import * as migration001 from '../migrations/001_strategies.ts';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createStrategy, updateStrategy } from '../src/operations.ts';
import type { StrategiesDatabase, StrategiesDb } from '../src/repository.ts';

/**
 * Name uniqueness against real Postgres on a database whose locale is C, where lower() folds ASCII
 * only: the rule must hold there too, because the key is computed by the application (migration 002).
 */

interface CLocaleDatabase {
  url: string;
  sql(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  drop(): Promise<void>;
}

async function createCLocaleDatabase(): Promise<CLocaleDatabase> {
  const database = await createTestDatabase({ locale: 'C' });
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  // pool.end() resolves before its clients have closed; the forced drop may then cut them off.
  pool.on('error', () => undefined);
  return {
    url: database.url,
    sql: (text, values) => pool.query(text, values),
    drop: async () => {
      await pool.end();
      await database.drop();
    },
  };
}

const opened: { drop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const database of opened.reverse()) await database.drop();
});

async function cLocaleDatabase(): Promise<CLocaleDatabase> {
  const database = await createCLocaleDatabase();
  opened.push(database);
  return database;
}

function strategiesDb(url: string): StrategiesDb {
  const db = createDatabase<StrategiesDatabase>({ url, schema: SCHEMA, applicationName: 'strategies-test', maxConnections: 4 });
  opened.push({ drop: () => db.destroy() });
  return db;
}

/** A strategy stored as a process of the previous release stored it: no name_key. */
async function insertAsRelease1(database: CLocaleDatabase, accountId: string, name: string, status = 'ACTIVE'): Promise<string> {
  const id = newId();
  await database.sql('insert into strategies.strategies (id, account_id, name, status) values ($1, $2, $3, $4)', [id, accountId, name, status]);
  return id;
}

async function indexesOf(database: CLocaleDatabase): Promise<string[]> {
  const result = await database.sql(`select indexname from pg_indexes where schemaname = 'strategies' and tablename = 'strategies' order by 1`);
  return result.rows.map((row: { indexname: string }) => row.indexname);
}

describe('on a database with the C locale', () => {
  let database: CLocaleDatabase;
  let db: StrategiesDb;

  beforeAll(async () => {
    database = await cLocaleDatabase();
    await migrateService({ schema: SCHEMA, migrations }, database.url);
    db = strategiesDb(database.url);
  });

  it('is a database where lower() leaves non-ASCII capitals alone', async () => {
    const result = await database.sql(`select lower('ÉMILE') as lowered`);
    expect(result.rows[0].lowered).toBe('Émile');
  });

  it('refuses a name that differs from a non-archived one only in the case of non-ASCII letters', async () => {
    for (const [first, second] of [
      ['ÉMILE', 'émile'],
      ['Émile', 'E\u0301MILE'],
      ['ДЕЛЬТА', 'дельта'],
      ['ΟΔΟΣ', 'Οδος'],
      ['İstanbul', 'i\u0307stanbul'],
    ] as const) {
      const accountId = newId();
      expect(await createStrategy(testScope(db, accountId), { name: first }), first).toMatchObject({ ok: true });
      expect(await createStrategy(testScope(db, accountId), { name: second }), second).toMatchObject({
        ok: false,
        error: { code: 'STRATEGY_NAME_TAKEN', field: 'name' },
      });
    }
  });

  it('applies the rule to renames, and lets a strategy change the case of its own non-ASCII name', async () => {
    const accountId = newId();
    await createStrategy(testScope(db, accountId), { name: 'Über' });
    const other = await createStrategy(testScope(db, accountId), { name: 'Other' });
    if (!other.ok) throw new Error(other.error.message);
    expect(await updateStrategy(testScope(db, accountId), { id: receiveId(other.value.id), name: 'ÜBER' })).toMatchObject({
      ok: false,
      error: { code: 'STRATEGY_NAME_TAKEN', field: 'name' },
    });
    const self = await createStrategy(testScope(db, accountId), { name: 'Ørsted' });
    if (!self.ok) throw new Error(self.error.message);
    expect(await updateStrategy(testScope(db, accountId), { id: receiveId(self.value.id), name: 'ØRSTED' })).toMatchObject({ ok: true, value: { name: 'ØRSTED', name_key: 'ørsted' } });
  });

  it('keeps different letters and other accounts apart, and frees the name on archive', async () => {
    const accountId = newId();
    expect(await createStrategy(testScope(db, accountId), { name: 'Emile' })).toMatchObject({ ok: true });
    expect(await createStrategy(testScope(db, accountId), { name: 'Émile' })).toMatchObject({ ok: true });
    expect(await createStrategy(testScope(db, newId()), { name: 'ÉMILE' })).toMatchObject({ ok: true });
    await database.sql(`update strategies.strategies set status = 'ARCHIVED' where account_id = $1 and name = 'Émile'`, [accountId]);
    expect(await createStrategy(testScope(db, accountId), { name: 'ÉMILE' })).toMatchObject({ ok: true });
  });

  it('has replaced the lower(name) index with the name_key index', async () => {
    expect(await indexesOf(database)).toEqual(['strategies_account_active_name_key', 'strategies_account_created', 'strategies_pkey']);
  });
});

describe('migration 002 on data of the previous release', () => {
  it('backfills name_key for every row, in batches, and then requires it', async () => {
    const database = await cLocaleDatabase();
    await migrateService({ schema: SCHEMA, migrations: { '001_strategies': migration001 } }, database.url);
    const accountId = newId();
    const names = Array.from({ length: 1_203 }, (_, i) => `Strategy ${i} ÄÖÜ`);
    await database.sql(
      `insert into strategies.strategies (id, account_id, name, status) select gen_random_uuid(), $1, name, 'ACTIVE' from unnest($2::text[]) as name`,
      [accountId, names],
    );
    // Namesakes under the new key may exist among archived strategies: they stay out of the index.
    await insertAsRelease1(database, accountId, 'ÉMILE', 'ARCHIVED');
    await insertAsRelease1(database, accountId, 'émile', 'ARCHIVED');
    await insertAsRelease1(database, accountId, 'Émile');

    await migrateService({ schema: SCHEMA, migrations }, database.url);

    const keys = await database.sql('select name, name_key from strategies.strategies');
    expect(keys.rows).toHaveLength(1_206);
    for (const row of keys.rows as { name: string; name_key: string }[]) expect(row.name_key).toBe(row.name.toLowerCase());
    await expect(database.sql(`insert into strategies.strategies (id, account_id, name, status) values ($1, $2, 'No key', 'ACTIVE')`, [newId(), accountId])).rejects.toThrow(
      /name_key/,
    );
    const db = strategiesDb(database.url);
    expect(await createStrategy(testScope(db, accountId), { name: 'émile' })).toMatchObject({ ok: false, error: { code: 'STRATEGY_NAME_TAKEN' } });
  });

  it('stops, changing nothing, when non-archived strategies of an account collide under the new key', async () => {
    const database = await cLocaleDatabase();
    await migrateService({ schema: SCHEMA, migrations: { '001_strategies': migration001 } }, database.url);
    const accountId = newId();
    // What the lower(name) index let through on a C-locale database.
    await insertAsRelease1(database, accountId, 'ÉMILE');
    await insertAsRelease1(database, accountId, 'émile', 'PAUSED');

    const failure = await migrateService({ schema: SCHEMA, migrations }, database.url).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failure).toMatch(new RegExp(`at 002_name_key: .*account ${accountId}: ".MILE", ".mile"`));
    expect(failure).toContain('"ÉMILE"');
    expect(failure).toContain('"émile"');
    const columns = await database.sql(`select column_name from information_schema.columns where table_schema = 'strategies' and table_name = 'strategies'`);
    expect(columns.rows.map((row: { column_name: string }) => row.column_name)).not.toContain('name_key');
    expect(await indexesOf(database)).toContain('strategies_account_active_name');

    // Once the account has archived one of them, the migration goes through.
    await database.sql(`update strategies.strategies set status = 'ARCHIVED' where name = 'émile'`);
    await migrateService({ schema: SCHEMA, migrations }, database.url);
    expect(await indexesOf(database)).toContain('strategies_account_active_name_key');
  });
});
