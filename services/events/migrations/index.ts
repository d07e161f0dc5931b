import type { Migration } from 'kysely';
import * as events from './001_events.ts';
import * as messagesDuePerEndpoint from './002_messages_due_per_endpoint.ts';
import * as endpointLastFailedAt from './003_endpoint_last_failed_at.ts';
import * as eventsByType from './004_events_by_type.ts';

export const SCHEMA = 'events';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_events': events,
  '002_messages_due_per_endpoint': messagesDuePerEndpoint,
  '003_endpoint_last_failed_at': endpointLastFailedAt,
  '004_events_by_type': eventsByType,
};
