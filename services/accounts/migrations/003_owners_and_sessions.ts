import { sql, type Kysely } from 'kysely';

/**
 * The console's people: owners (one or more per account), their one-time set-password links and
 * their sessions. Secrets are stored only as hashes: a password as its argon2id string, a link's
 * token and a session id as SHA-256 (both are 256-bit random values, so a plain hash cannot be
 * reversed by guessing and a lookup by hash stays an index probe). Everything of an account goes
 * with it when its row is deleted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('owners')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    // Lower-cased on input: an email signs in to one owner, whatever its case.
    .addColumn('email', 'text', (col) => col.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('password_set_at', sql`timestamptz(3)`)
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('owners_account').on('owners').columns(['account_id', 'created_at']).execute();

  await db.schema
    .createTable('set_password_tokens')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('owner_id', 'uuid', (col) => col.notNull().references('owners.id').onDelete('cascade'))
    .addColumn('token_hash', 'bytea', (col) => col.notNull().unique())
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('expires_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('used_at', sql`timestamptz(3)`)
    .execute();
  await db.schema.createIndex('set_password_tokens_owner').on('set_password_tokens').columns(['account_id', 'owner_id']).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('owner_id', 'uuid', (col) => col.notNull().references('owners.id').onDelete('cascade'))
    .addColumn('token_hash', 'bytea', (col) => col.notNull().unique())
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('last_seen_at', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('sessions_owner').on('sessions').columns(['account_id', 'owner_id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('sessions').execute();
  await db.schema.dropTable('set_password_tokens').execute();
  await db.schema.dropTable('owners').execute();
}
