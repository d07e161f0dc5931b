import type { Migration } from 'kysely';
import * as strategies from './001_strategies.ts';

export const SCHEMA = 'strategies';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_strategies': strategies,
};
