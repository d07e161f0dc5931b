import { sql, type Kysely } from 'kysely';

/** Wire decimals carry at most 20 integer and 10 fraction digits; the column enforces the same. */
const WIRE_DECIMAL = sql`numeric(30, 10)`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('order_submissions')
    .addColumn('id', 'uuid', (col) => col.primaryKey())
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    .addColumn('client_order_id', 'text', (col) => col.check(sql`client_order_id ~ '^[A-Za-z0-9._:-]{1,64}$'`))
    // A strategy of the same account, checked with the strategies subgraph at submission.
    .addColumn('strategy_id', 'uuid')
    .addColumn('symbol', 'text', (col) => col.notNull().check(sql`symbol ~ '^[A-Z0-9./-]{1,16}$'`))
    .addColumn('side', 'text', (col) => col.notNull().check(sql`side in ('BUY', 'SELL')`))
    .addColumn('type', 'text', (col) => col.notNull().check(sql`type in ('MARKET', 'LIMIT', 'STOP', 'STOP_LIMIT')`))
    .addColumn('time_in_force', 'text', (col) => col.notNull().check(sql`time_in_force in ('DAY', 'GTC', 'IOC', 'FOK')`))
    .addColumn('quantity', WIRE_DECIMAL, (col) => col.notNull().check(sql`quantity > 0`))
    .addColumn('limit_price', WIRE_DECIMAL, (col) => col.check(sql`limit_price > 0`))
    .addColumn('stop_price', WIRE_DECIMAL, (col) => col.check(sql`stop_price > 0`))
    .addColumn('status', 'text', (col) =>
      col.notNull().check(sql`status in ('SUBMITTED', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED')`),
    )
    .addColumn('filled_quantity', WIRE_DECIMAL, (col) => col.notNull().defaultTo(0))
    // Exact sum of quantity × price over applied fills (up to 20 fraction digits): the average fill
    // price is derived from it on read, so it is never rounded twice.
    .addColumn('fill_notional', 'numeric', (col) => col.notNull().defaultTo(0))
    .addColumn('submitted_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('updated_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addColumn('cancelled_at', sql`timestamptz(3)`)
    .addCheckConstraint('order_submissions_prices_match_type', sql`
      (limit_price is not null) = (type in ('LIMIT', 'STOP_LIMIT'))
      and (stop_price is not null) = (type in ('STOP', 'STOP_LIMIT'))`)
    .addCheckConstraint('order_submissions_filled_within_quantity', sql`filled_quantity >= 0 and filled_quantity <= quantity`)
    .addCheckConstraint('order_submissions_filled_status', sql`(status = 'FILLED') = (filled_quantity = quantity)`)
    .addCheckConstraint('order_submissions_cancelled_at_status', sql`(status = 'CANCELLED') = (cancelled_at is not null)`)
    .execute();

  // Idempotency of submitOrder: enforced here, so concurrent retries cannot both insert. NULLs are
  // distinct, so orders without a clientOrderId are never deduplicated. Also serves the clientOrderId filter.
  await db.schema
    .createIndex('order_submissions_account_client_order_id')
    .on('order_submissions')
    .columns(['account_id', 'client_order_id'])
    .unique()
    .execute();
  // One index per ordering and per selective filter, each leading with the account, so that a
  // listing reads only the caller's rows and page N costs what page 1 costs.
  await db.schema
    .createIndex('order_submissions_account_submitted')
    .on('order_submissions')
    .columns(['account_id', 'submitted_at desc', 'id desc'])
    .execute();
  await db.schema
    .createIndex('order_submissions_account_updated')
    .on('order_submissions')
    .columns(['account_id', 'updated_at', 'id'])
    .execute();
  await db.schema
    .createIndex('order_submissions_account_strategy_submitted')
    .on('order_submissions')
    .columns(['account_id', 'strategy_id', 'submitted_at desc', 'id desc'])
    .execute();
  await db.schema
    .createIndex('order_submissions_account_symbol_submitted')
    .on('order_submissions')
    .columns(['account_id', 'symbol', 'submitted_at desc', 'id desc'])
    .execute();
  await db.schema
    .createIndex('order_submissions_account_status_submitted')
    .on('order_submissions')
    .columns(['account_id', 'status', 'submitted_at desc', 'id desc'])
    .execute();

  await db.schema
    .createTable('fill_applications')
    .addColumn('account_id', 'uuid', (col) => col.notNull())
    // The fills subgraph's id of the fill; an application is recorded once per fill.
    .addColumn('fill_id', 'text', (col) => col.notNull())
    .addColumn('order_submission_id', 'uuid', (col) => col.notNull().references('order_submissions.id'))
    .addColumn('quantity', WIRE_DECIMAL, (col) => col.notNull().check(sql`quantity > 0`))
    .addColumn('price', WIRE_DECIMAL, (col) => col.notNull().check(sql`price > 0`))
    .addColumn('applied_at', sql`timestamptz(3)`, (col) => col.notNull())
    .addPrimaryKeyConstraint('fill_applications_pkey', ['account_id', 'fill_id'])
    .execute();

  // The per-account write clock: see `stampWrite` in src/repository.ts.
  await db.schema
    .createTable('account_write_clocks')
    .addColumn('account_id', 'uuid', (col) => col.primaryKey())
    .addColumn('last_stamp', sql`timestamptz(3)`, (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('account_write_clocks').execute();
  await db.schema.dropTable('fill_applications').execute();
  await db.schema.dropTable('order_submissions').execute();
}
