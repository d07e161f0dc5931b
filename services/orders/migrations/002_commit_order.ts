import { sql, type Kysely } from 'kysely';
import { addCommitOrder, dropCommitOrder, type CommitOrderTable } from '@ots/shared/commit-order';

const FEED: CommitOrderTable = { schema: 'orders', table: 'order_submissions', scope: ['account_id'] };

/**
 * The incremental sync pages by commit order (shared/src/commit-order.ts) instead of stamps from
 * the per-account write clock, which serialised every write of an account. The clock table goes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await addCommitOrder(db, FEED);
  await db.schema.dropTable('account_write_clocks').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('account_write_clocks')
    .addColumn('account_id', 'uuid', (col) => col.primaryKey())
    .addColumn('last_stamp', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
  await dropCommitOrder(db, FEED);
}
