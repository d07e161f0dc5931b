import { sql, type Kysely } from 'kysely';

/**
 * The security log of each account (key created, rolled, revoked; sign-in succeeded and failed;
 * password set), the sign-in failures the rate limits count, and which key replaced a rolled one
 * (a key in its roll's grace shows as "Expiring").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('security_events')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('type', 'text', (col) =>
      col.notNull().check(sql`type in ('key.created', 'key.rolled', 'key.revoked', 'sign_in.succeeded', 'sign_in.failed', 'password.set')`),
    )
    .addColumn('occurred_at', sql`timestamptz(3)`, (col) => col.notNull())
    // Orders events of the same millisecond (a roll logs the new key and the roll together) as they were written.
    .addColumn('seq', 'bigint', (col) => col.notNull().generatedAlwaysAsIdentity())
    // Null for the operator's CLI. The email is kept as it was then, so the log outlives a change of owner.
    .addColumn('owner_id', 'uuid')
    .addColumn('owner_email', 'text')
    .addColumn('client_address', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('key_id', 'uuid')
    .addColumn('key_display_prefix', 'text')
    .execute();
  await db.schema.createIndex('security_events_account_time').on('security_events').columns(['account_id', 'occurred_at', 'seq']).execute();

  // Every failed sign-in, known email or not: the email only as a SHA-256 of its lower-cased form,
  // since people type passwords into the email field.
  await db.schema
    .createTable('sign_in_failures')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('email_hash', 'bytea', (col) => col.notNull())
    .addColumn('client_address', 'text', (col) => col.notNull())
    .addColumn('failed_at', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('sign_in_failures_email').on('sign_in_failures').columns(['email_hash', 'failed_at']).execute();
  await db.schema.createIndex('sign_in_failures_address').on('sign_in_failures').columns(['client_address', 'failed_at']).execute();
  await db.schema.createIndex('sign_in_failures_time').on('sign_in_failures').column('failed_at').execute();

  await db.schema.alterTable('api_keys').addColumn('replaced_by_key_id', 'uuid').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('replaced_by_key_id').execute();
  await db.schema.dropTable('sign_in_failures').execute();
  await db.schema.dropTable('security_events').execute();
}
