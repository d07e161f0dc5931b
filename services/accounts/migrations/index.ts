import type { Migration } from 'kysely';
import * as accountsAndKeys from './001_accounts_and_keys.ts';

export const SCHEMA = 'accounts';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_accounts_and_keys': accountsAndKeys,
};
