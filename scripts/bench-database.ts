import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Config } from '@ots/shared/config';
import { ensureDevDatabase } from '@ots/shared/dev-database';
import type { Logger } from '@ots/shared/logger';
import { migrateAll } from './stack.ts';

export interface BenchDatabase {
  /** The configuration pointed at the database, with a Redis key prefix of its own. */
  config: Config;
  drop(): Promise<void>;
}

/**
 * A throwaway, migrated database for a bench run, on DATABASE_URL's server or else the embedded
 * Postgres (started for the run and stopped by `drop` if it was not running).
 */
export async function createBenchDatabase(base: Config, logger: Logger, label: string): Promise<BenchDatabase> {
  const dev = base.databaseUrl ? undefined : await ensureDevDatabase(logger);
  const serverUrl = base.databaseUrl ?? dev!.url;
  const databaseName = `ots_${label}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${databaseName}`);
  const databaseUrl = Object.assign(new URL(serverUrl), { pathname: `/${databaseName}` }).toString();
  // Every service on the throwaway database, whatever <SERVICE>_DATABASE_URL says.
  const config = { ...base, databaseUrl, serviceDatabaseUrls: {}, redisKeyPrefix: `bench:${databaseName}:` };
  await migrateAll(config);
  return {
    config,
    drop: async () => {
      await admin.query(`drop database ${databaseName} with (force)`);
      await admin.end();
      await dev?.stop();
    },
  };
}
