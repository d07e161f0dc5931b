import { sql, type Kysely } from 'kysely';

/**
 * The answers the gateway keeps for mutations sent with an `Idempotency-Key` (contract section 4):
 * one row per account and key, claimed before the mutation runs and holding its answer after, so a
 * repeat on any gateway replica, before or after a restart, is answered from here for 24 hours.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'uuid', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('key', 'text', (col) => col.notNull())
    // SHA-256 of the request's query, variables and operationName: a repeat must be the same request.
    .addColumn('request_hash', 'bytea', (col) => col.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull())
    // Until then a row without an answer is a request in progress; after it, one abandoned by a crashed gateway.
    .addColumn('locked_until', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_content_type', 'text')
    .addColumn('response_body', 'text')
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['account_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
