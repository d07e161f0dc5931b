import type { Migration } from 'kysely';
import * as fills from './001_fills.ts';

export const SCHEMA = 'fills';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_fills': fills,
};
