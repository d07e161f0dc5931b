import type { Kysely } from 'kysely';

/**
 * listEvents with `types` seeks each type's events in commit order through this index instead of
 * going over every event of the account after the cursor: a filter that matches few events costs a
 * page what it costs one that matches many (contract section 4). Built while the table is locked for
 * writes, as every index of these migrations: on a large feed, in a quiet hour.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('events_account_id_type_commit_order').on('events').columns(['account_id', 'type', 'commit_xid', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('events_account_id_type_commit_order').execute();
}
