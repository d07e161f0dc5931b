import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { createDatabase, migrateSchema, type SchemaMigrations } from '../db.ts';

/**
 * The one way a test gets a database: a fresh one on the test server (the vitest global set-up's
 * `postgresUrl`), so that test files never see each other's rows. A whole stack takes an empty one
 * (`createTestDatabase`); a test below the GraphQL layer (a repository's SQL, its plans, its
 * concurrency) takes one with its schema migrated and a pool bound to it (`useSchemaDatabase`).
 */

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** `'C'`: a database whose collation and character classes are C, where lower() folds ASCII only. */
  locale?: 'C';
  /** Migrates this schema before the database is handed over. */
  migrate?: SchemaMigrations;
}

/** A fresh database on the test server: empty, or with `options.migrate`'s schema migrated. */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const serverUrl = inject('postgresUrl');
  const name = `ots_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(
    options.locale === 'C' ? `create database ${name} template template0 encoding 'UTF8' lc_collate 'C' lc_ctype 'C'` : `create database ${name}`,
  );
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const database: TestDatabase = {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
  if (options.migrate) await migrateSchema(database.url, options.migrate);
  return database;
}

export interface SchemaTestDatabase<DB> {
  /** The database's URL, for a second pool (another process's) or a plan explainer. */
  url: string;
  /** A pool bound to the schema, as the service opens its own. */
  db: Kysely<DB>;
  close(): Promise<void>;
}

export interface PoolOptions {
  applicationName: string;
  maxConnections: number;
}

/** A fresh database with `target`'s schema migrated, and a pool on it bound to that schema. */
export async function openSchemaDatabase<DB>(target: SchemaMigrations, pool: PoolOptions): Promise<SchemaTestDatabase<DB>> {
  const database = await createTestDatabase({ migrate: target });
  const db = createDatabase<DB>({ url: database.url, schema: target.schema, ...pool });
  return {
    url: database.url,
    db,
    close: async () => {
      await db.destroy();
      await database.drop();
    },
  };
}

/**
 * The calling test file's own `openSchemaDatabase`, open while its tests are collected and closed
 * after the last of them. Await it at the top level of the file.
 */
export async function useSchemaDatabase<DB>(target: SchemaMigrations, pool: PoolOptions): Promise<SchemaTestDatabase<DB>> {
  const database = await openSchemaDatabase<DB>(target, pool);
  afterAll(() => database.close());
  return database;
}
