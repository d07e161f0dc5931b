import { sql, type Kysely } from 'kysely';

/**
 * Issue 25: orders records each fill it decides, whole, with its `fill.recorded` event, in the one
 * statement that applies it; the fills subgraph keeps its copy from that decision. So an
 * application holds the fill's terms, and the venue's execution id is unique per account here, where
 * the fill is decided: a retry is recognised by it before anything is applied. Applications written
 * before this migration have no execution id (the fills subgraph judged their retries).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('fill_applications')
    .addColumn('execution_id', 'text')
    .addColumn('fee', sql`numeric(30, 10)`, (col) => col.check(sql`fee >= 0`))
    .addColumn('liquidity', 'text', (col) => col.check(sql`liquidity in ('MAKER', 'TAKER', 'UNKNOWN')`))
    .addColumn('executed_at', sql`timestamptz(3)`)
    .execute();
  await db.schema.createIndex('fill_applications_execution_id').on('fill_applications').columns(['account_id', 'execution_id']).unique().execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('fill_applications_execution_id').execute();
  await db.schema
    .alterTable('fill_applications')
    .dropColumn('executed_at')
    .dropColumn('liquidity')
    .dropColumn('fee')
    .dropColumn('execution_id')
    .execute();
}
