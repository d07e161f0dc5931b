import type { Migration } from 'kysely';
import * as fills from './001_fills.ts';
import * as symbolIndex from './002_fills_symbol_index.ts';

export const SCHEMA = 'fills';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_fills': fills,
  '002_fills_symbol_index': symbolIndex,
};
