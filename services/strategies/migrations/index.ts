import type { Migration } from 'kysely';
import * as strategies from './001_strategies.ts';
import * as nameKey from './002_name_key.ts';
import * as outbox from './003_outbox.ts';

export const SCHEMA = 'strategies';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_strategies': strategies,
  '002_name_key': nameKey,
  '003_outbox': outbox,
};
