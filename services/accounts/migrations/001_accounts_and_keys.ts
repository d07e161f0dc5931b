import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('api_access_enabled', 'boolean', (col) => col.notNull().defaultTo(true))
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull().references('accounts.id'))
    .addColumn('name', 'text')
    .addColumn('environment', 'text', (col) => col.notNull().check(sql`environment in ('LIVE', 'SANDBOX')`))
    // HMAC-SHA-256 of the full key under the server secret; the key itself is never stored.
    .addColumn('key_hash', 'bytea', (col) => col.notNull().unique())
    .addColumn('display_prefix', 'text', (col) => col.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', sql`timestamptz(3)`)
    .addColumn('last_used_at', sql`timestamptz(3)`)
    .addColumn('revoked_at', sql`timestamptz(3)`)
    .execute();

  await db.schema.createIndex('api_keys_account_created').on('api_keys').columns(['account_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('accounts').execute();
}
