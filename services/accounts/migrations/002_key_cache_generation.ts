import { sql, type Kysely } from 'kysely';

/**
 * One counter, bumped in the same transaction as every revocation, expiry change or access change.
 * Gateways poll it, and trust a cached key record only if it was cached under the current value, so
 * an invalidation that could not reach Redis (or raced a concurrent cache fill) still takes effect.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('key_cache_generation')
    .addColumn('singleton', 'boolean', (col) => col.primaryKey().defaultTo(true).check(sql`singleton`))
    .addColumn('generation', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  // Built with the query builder (not raw SQL) so that it lands in the migrated schema.
  await (db as Kysely<{ key_cache_generation: { singleton: boolean; generation: number } }>)
    .insertInto('key_cache_generation')
    .values({ singleton: true, generation: 0 })
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('key_cache_generation').execute();
}
