import { sql, type Kysely } from 'kysely';
import { addCommitOrder } from '@ots/shared/commit-order';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('occurred_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('data', 'jsonb', (col) => col.notNull())
    .addColumn('received_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  // listEvents pages in commit order per account: (account_id, commit_xid, id).
  await addCommitOrder(db, { schema: 'events', table: 'events', scope: ['account_id'] });
  // The retention clean-up deletes by age across accounts.
  await db.schema.createIndex('events_occurred_at').on('events').column('occurred_at').execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('url', 'text', (col) => col.notNull())
    .addColumn('event_types', sql`text[]`, (col) => col.notNull())
    .addColumn('description', 'text')
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('ENABLED', 'DISABLED')`))
    .addColumn('disabled_reason', 'text')
    .addColumn('secret', 'text', (col) => col.notNull())
    // During a rotation's grace both secrets sign.
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', sql`timestamptz(3)`)
    // Start of the current run of failed attempts; null after a success. Five days of it disables the endpoint.
    .addColumn('failing_since', sql`timestamptz(3)`)
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('updated_at', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_account').on('webhook_endpoints').columns(['account_id', 'created_at', 'id']).execute();

  // One row per event to send to one endpoint: its retry state. The attempts are in webhook_attempts.
  await db.schema
    .createTable('webhook_messages')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('endpoint_id', 'uuid', (col) => col.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_id', 'uuid', (col) => col.notNull().references('events.id').onDelete('cascade'))
    // A redelivery asked for by the client, beside the automatic one.
    .addColumn('manual', 'boolean', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull().check(sql`state in ('PENDING', 'DELIVERED', 'FAILED')`))
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_attempt_at', sql`timestamptz(3)`, (col) => col.notNull())
    // Set by the dispatcher that claimed the message; its result is recorded only under the same token.
    .addColumn('claim_token', 'uuid')
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
  // Each event is fanned out to an endpoint once, however often its ingest is repeated.
  await db.schema
    .createIndex('webhook_messages_automatic')
    .on('webhook_messages')
    .columns(['endpoint_id', 'event_id'])
    .unique()
    .where(sql.ref('manual'), '=', false)
    .execute();
  // The dispatcher's claim: due pending messages, oldest first.
  await db.schema
    .createIndex('webhook_messages_due')
    .on('webhook_messages')
    .column('next_attempt_at')
    .where(sql.ref('state'), '=', 'PENDING')
    .execute();
  await db.schema.createIndex('webhook_messages_event').on('webhook_messages').column('event_id').execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('endpoint_id', 'uuid', (col) => col.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('message_id', 'uuid', (col) => col.notNull().references('webhook_messages.id').onDelete('cascade'))
    .addColumn('event_id', 'uuid', (col) => col.notNull())
    .addColumn('attempt', 'integer', (col) => col.notNull())
    .addColumn('attempted_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('failure', 'text')
    .addColumn('succeeded', 'boolean', (col) => col.notNull())
    .addColumn('duration_ms', 'integer', (col) => col.notNull())
    .execute();
  // An endpoint's deliveries, newest first.
  await db.schema
    .createIndex('webhook_attempts_endpoint')
    .on('webhook_attempts')
    .columns(['account_id', 'endpoint_id', 'attempted_at desc', 'id desc'])
    .execute();
  await db.schema.createIndex('webhook_attempts_message').on('webhook_attempts').column('message_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_attempts').execute();
  await db.schema.dropTable('webhook_messages').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
  await db.schema.dropTable('events').execute();
}
