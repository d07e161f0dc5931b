import type { Kysely } from 'kysely';
import { createOutboxTable } from '@ots/shared/outbox';

/** The order_submission.* events, written in the transaction of each change (shared/src/outbox.ts). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await createOutboxTable(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('outbox').execute();
}
