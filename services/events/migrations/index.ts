import type { Migration } from 'kysely';
import type { OnlineIndex } from '@ots/shared/db';
import * as events from './001_events.ts';
import * as messagesDuePerEndpoint from './002_messages_due_per_endpoint.ts';
import * as endpointLastFailedAt from './003_endpoint_last_failed_at.ts';

export const SCHEMA = 'events';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_events': events,
  '002_messages_due_per_endpoint': messagesDuePerEndpoint,
  '003_endpoint_last_failed_at': endpointLastFailedAt,
};

/**
 * listEvents with `types` seeks each type's events in commit order through this index instead of
 * going over every event of the account after the cursor: a filter that matches few events costs a
 * page what it costs one that matches many (contract section 4).
 */
export const onlineIndexes: readonly OnlineIndex[] = [
  { name: 'events_account_id_type_commit_order', table: 'events', columns: ['account_id', 'type', 'commit_xid', 'id'] },
];
