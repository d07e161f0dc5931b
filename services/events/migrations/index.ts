import type { Migration } from 'kysely';
import * as events from './001_events.ts';

export const SCHEMA = 'events';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_events': events,
};
