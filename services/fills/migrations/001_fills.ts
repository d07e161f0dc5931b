import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('fills')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    // The key that recorded the fill: the recovery sweeper acts for it when it finishes a pending fill.
    .addColumn('api_key_id', 'uuid', (col) => col.notNull())
    .addColumn('order_submission_id', 'uuid', (col) => col.notNull())
    // Copied from the order when the fill is recorded (an order's strategy, symbol and side never
    // change), so positions and filters need no call to the orders subgraph.
    .addColumn('strategy_id', 'uuid')
    .addColumn('symbol', 'text', (col) => col.notNull())
    .addColumn('side', 'text', (col) => col.notNull().check(sql`side in ('BUY', 'SELL')`))
    .addColumn('execution_id', 'text', (col) => col.notNull())
    .addColumn('quantity', 'numeric', (col) => col.notNull().check(sql`quantity > 0`))
    .addColumn('price', 'numeric', (col) => col.notNull().check(sql`price > 0`))
    .addColumn('fee', 'numeric', (col) => col.notNull().check(sql`fee >= 0`))
    .addColumn('liquidity', 'text', (col) => col.notNull().check(sql`liquidity in ('MAKER', 'TAKER', 'UNKNOWN')`))
    .addColumn('executed_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('recorded_at', sql`timestamptz(3)`, (col) => col.notNull().defaultTo(sql`now()`))
    // PENDING: stored, not yet confirmed applied by the orders subgraph; invisible to reads.
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('PENDING', 'APPLIED')`))
    .addColumn('applied_at', sql`timestamptz(3)`)
    .execute();

  // Idempotency: one fill per execution id and account, whatever the race.
  await db.schema.createIndex('fills_account_execution_id').on('fills').columns(['account_id', 'execution_id']).unique().execute();

  // Reads see applied fills only; each partial index serves one access path.
  await db.schema
    .createIndex('fills_account_executed')
    .on('fills')
    .columns(['account_id', 'executed_at desc', 'id desc'])
    .where(sql.ref('status'), '=', 'APPLIED')
    .execute();
  await db.schema
    .createIndex('fills_account_order_executed')
    .on('fills')
    .columns(['account_id', 'order_submission_id', 'executed_at', 'id'])
    .where(sql.ref('status'), '=', 'APPLIED')
    .execute();
  await db.schema
    .createIndex('fills_account_strategy_executed')
    .on('fills')
    .columns(['account_id', 'strategy_id', 'executed_at', 'id'])
    .where(sql.ref('status'), '=', 'APPLIED')
    .execute();
  // The sweeper's work list: small, since a fill is pending only while a request is in flight or after a failure.
  await db.schema
    .createIndex('fills_account_pending')
    .on('fills')
    .columns(['account_id', 'recorded_at'])
    .where(sql.ref('status'), '=', 'PENDING')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('fills').execute();
}
