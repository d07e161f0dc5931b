import { sql, type Kysely } from 'kysely';

/**
 * Name uniqueness independent of the database's locale. Migration 001 compared `lower(name)`, which
 * follows the database's ctype: under a C/POSIX locale "ÉMILE" and "émile" do not collide. From here
 * on the key is computed by the application (`nameKey` in src/domain.ts) and stored in `name_key`;
 * the partial unique index compares it byte for byte.
 *
 * Rows that exist are backfilled here, in TypeScript, because no SQL function computes the same key.
 * If existing non-archived strategies of one account collide under the new key (possible only where
 * the old index did not see them as equal, e.g. on a C-locale database), the migration stops, changes
 * nothing, and names them: which one to rename or archive is the account's decision, not a migration's.
 *
 * The migrator runs this in one transaction; the table lock makes writers of an older version wait
 * for it, so that no row escapes the backfill (after it they are refused: name_key is required).
 */

/**
 * Frozen copy of `nameKey` as of this migration: a released migration must not change with the
 * application. test/domain.unit.test.ts checks that the two agree.
 */
export function nameKeyV1(name: string): string {
  return name.normalize('NFC').toLowerCase().normalize('NFC');
}

const BATCH_SIZE = 500;

/** Named with its schema, so the statements below do not depend on the connection's search path. */
const TABLE = sql.table('strategies.strategies');

interface Db {
  strategies: { id: string; account_id: string; name: string; name_key: string | null; status: string; created_at: Date };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration runs against the schema as it was then, not today's table types (Kysely's advice)
export async function up(database: Kysely<any>): Promise<void> {
  const db = database as Kysely<Db>;
  await sql`lock table ${TABLE} in share row exclusive mode`.execute(db);
  await db.schema.alterTable('strategies').addColumn('name_key', 'text').execute();

  let after: string | undefined;
  for (;;) {
    let query = db.selectFrom('strategies').select(['id', 'name']).orderBy('id').limit(BATCH_SIZE);
    if (after !== undefined) query = query.where('id', '>', after);
    const rows = await query.execute();
    if (rows.length === 0) break;
    const values = sql.join(rows.map((row) => sql`(${row.id}::uuid, ${nameKeyV1(row.name)})`));
    await sql`update ${TABLE} as s set name_key = v.name_key
      from (values ${values}) as v (id, name_key) where s.id = v.id`.execute(db);
    after = rows.at(-1)!.id;
  }

  const collisions = await db
    .selectFrom('strategies')
    .select(['account_id', 'name_key', sql<string[]>`array_agg(name order by created_at, id)`.as('names')])
    .where('status', '<>', 'ARCHIVED')
    .groupBy(['account_id', 'name_key'])
    .having(sql`count(*)`, '>', 1)
    .orderBy('account_id')
    .limit(20)
    .execute();
  if (collisions.length > 0) {
    const listed = collisions.map((row) => `account ${row.account_id}: ${row.names.map((name) => JSON.stringify(name)).join(', ')}`);
    throw new Error(
      `non-archived strategies whose names differ only in case: ${listed.join('; ')}. ` +
        'Rename or archive all but one of each group, then migrate again.',
    );
  }

  await db.schema.alterTable('strategies').alterColumn('name_key', (col) => col.setNotNull()).execute();
  await db.schema
    .createIndex('strategies_account_active_name_key')
    .on('strategies')
    .unique()
    .columns(['account_id', 'name_key'])
    .where(sql.ref('status'), '<>', 'ARCHIVED')
    .execute();
  await db.schema.dropIndex('strategies_account_active_name').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a migration runs against the schema as it was then, not today's table types (Kysely's advice)
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('strategies_account_active_name')
    .on('strategies')
    .unique()
    .expression(sql`account_id, lower(name)`)
    .where(sql.ref('status'), '<>', 'ARCHIVED')
    .execute();
  await db.schema.dropIndex('strategies_account_active_name_key').execute();
  await db.schema.alterTable('strategies').dropColumn('name_key').execute();
}
