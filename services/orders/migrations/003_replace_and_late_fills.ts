import { sql, type Kysely } from 'kysely';

/**
 * Issue 10: the REPLACED status and the cancel/replace chain, and late fills. A late fill may fill a
 * REPLACED order to its whole quantity without making it FILLED, so "filled to the quantity" now
 * means FILLED or REPLACED (a late fill that completes a CANCELLED order makes it FILLED).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('order_submissions')
    .addColumn('replaced_at', sql`timestamptz(3)`)
    // The order that replaced this one, and on the new order the one it replaced (FIX OrigClOrdID).
    .addColumn('replaced_by', 'uuid', (col) => col.references('order_submissions.id'))
    .addColumn('replaces_id', 'uuid', (col) => col.references('order_submissions.id').unique())
    .execute();
  await db.schema.alterTable('order_submissions').dropConstraint('order_submissions_status_check').execute();
  await db.schema.alterTable('order_submissions').dropConstraint('order_submissions_filled_status').execute();
  await db.schema
    .alterTable('order_submissions')
    .addCheckConstraint('order_submissions_status_check', sql`status in ('SUBMITTED', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED', 'REPLACED')`)
    .execute();
  await db.schema
    .alterTable('order_submissions')
    .addCheckConstraint(
      'order_submissions_filled_status',
      sql`(status <> 'FILLED' or filled_quantity = quantity) and (filled_quantity < quantity or status in ('FILLED', 'REPLACED'))`,
    )
    .execute();
  await db.schema
    .alterTable('order_submissions')
    .addCheckConstraint(
      'order_submissions_replaced_status',
      sql`(status = 'REPLACED') = (replaced_at is not null) and (replaced_at is null) = (replaced_by is null)`,
    )
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('order_submissions').dropConstraint('order_submissions_replaced_status').execute();
  await db.schema.alterTable('order_submissions').dropConstraint('order_submissions_filled_status').execute();
  await db.schema.alterTable('order_submissions').dropConstraint('order_submissions_status_check').execute();
  await db.schema
    .alterTable('order_submissions')
    .addCheckConstraint('order_submissions_status_check', sql`status in ('SUBMITTED', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED')`)
    .execute();
  await db.schema
    .alterTable('order_submissions')
    .addCheckConstraint('order_submissions_filled_status', sql`(status = 'FILLED') = (filled_quantity = quantity)`)
    .execute();
  await db.schema.alterTable('order_submissions').dropColumn('replaces_id').dropColumn('replaced_by').dropColumn('replaced_at').execute();
}
