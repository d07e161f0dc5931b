import { sql, type Kysely } from 'kysely';

/**
 * The applications recorded before migration 005 lack their execution id until the fills subgraph
 * has brought it back (the backfill, `src/legacy-fills.ts`). While an account has one, applyFill
 * cannot tell a new execution id from one of those, so every fill it decides asks whether the account
 * has one: this index answers that, and serves the backfill's walk through them, and holds nothing once
 * the backfill is done.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('fill_applications_lacking_execution_id')
    .on('fill_applications')
    .columns(['account_id', 'fill_id'])
    .where(sql.ref('execution_id'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('fill_applications_lacking_execution_id').execute();
}
