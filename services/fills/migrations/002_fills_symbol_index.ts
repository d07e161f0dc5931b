import { sql, type Kysely } from 'kysely';

/**
 * listFills filtered by symbol: without this index the newest-first query walks the account's
 * (executed_at, id) index and filters every applied fill of the account by symbol, however few of
 * them are in that symbol. This one seeks straight to the symbol's fills, already in page order.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('fills_account_symbol_executed')
    .on('fills')
    .columns(['account_id', 'symbol', 'executed_at desc', 'id desc'])
    .where(sql.ref('status'), '=', 'APPLIED')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('fills_account_symbol_executed').execute();
}
