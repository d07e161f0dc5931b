import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('strategies')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull().check(sql`char_length(name) between 1 and 100`))
    .addColumn('description', 'text', (col) => col.check(sql`char_length(description) <= 2000`))
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('ACTIVE', 'PAUSED', 'ARCHIVED')`))
    .addColumn('created_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  // The name rule lives here, not in a check-then-insert: concurrent creates and renames cannot
  // both win. Archived strategies leave the index, so their names may be reused.
  await db.schema
    .createIndex('strategies_account_active_name')
    .on('strategies')
    .unique()
    .expression(sql`account_id, lower(name)`)
    .where(sql.ref('status'), '<>', 'ARCHIVED')
    .execute();

  // Serves listStrategies' keyset (created_at desc, id desc) for one account.
  await db.schema
    .createIndex('strategies_account_created')
    .on('strategies')
    .columns(['account_id', 'created_at desc', 'id desc'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('strategies').execute();
}
