import { sql, type Kysely } from 'kysely';

/**
 * recordFill no longer reads the order before storing the pending fill (a call to orders saved):
 * the order's symbol and side reach fills with orders' verdict, when the fill is marked applied.
 * So a pending fill may lack them; an applied one never does.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('fills').alterColumn('symbol', (col) => col.dropNotNull()).execute();
  await db.schema.alterTable('fills').alterColumn('side', (col) => col.dropNotNull()).execute();
  await db.schema
    .alterTable('fills')
    .addCheckConstraint('fills_applied_has_order_details', sql`status = 'PENDING' or (symbol is not null and side is not null)`)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('fills').dropConstraint('fills_applied_has_order_details').execute();
  await sql`delete from fills.fills where symbol is null or side is null`.execute(db);
  await db.schema.alterTable('fills').alterColumn('symbol', (col) => col.setNotNull()).execute();
  await db.schema.alterTable('fills').alterColumn('side', (col) => col.setNotNull()).execute();
}
