import type { Migration } from 'kysely';
import * as accountsAndKeys from './001_accounts_and_keys.ts';
import * as keyCacheGeneration from './002_key_cache_generation.ts';

export const SCHEMA = 'accounts';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_accounts_and_keys': accountsAndKeys,
  '002_key_cache_generation': keyCacheGeneration,
};
