import { sql, type Kysely } from 'kysely';

/**
 * The dispatcher claims each endpoint's due messages on their own (so that one endpoint's backlog
 * never fills a claim meant for the others): this index seeks straight to one endpoint's oldest
 * due messages.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_messages_endpoint_due')
    .on('webhook_messages')
    .columns(['endpoint_id', 'next_attempt_at'])
    .where(sql.ref('state'), '=', 'PENDING')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_messages_endpoint_due').execute();
}
