import { sql, type Generated, type Kysely, type Selectable } from 'kysely';
import { compiledStatement } from '@ots/shared/compiled-statement';
import type { Uuid } from '@ots/shared/ids';
import type { OutboxDatabase, OutboxRow } from '@ots/shared/outbox';
import { inKeysetOrder, type KeysetPosition } from '@ots/shared/pagination';
import type { Liquidity, OrderSide } from './domain.ts';

export type FillStatus = 'PENDING' | 'APPLIED';

export interface FillsDatabase extends OutboxDatabase {
  fills: {
    id: Uuid;
    account_id: string;
    api_key_id: string;
    order_submission_id: Uuid;
    strategy_id: string | null;
    /** The order's; null only while the fill is pending (they arrive with orders' verdict). */
    symbol: string | null;
    side: OrderSide | null;
    execution_id: string;
    /** numeric columns travel as strings, never as floats. */
    quantity: string;
    price: string;
    fee: string;
    liquidity: Liquidity;
    executed_at: Date;
    recorded_at: Generated<Date>;
    status: FillStatus;
    applied_at: Date | null;
  };
}

export type FillsDb = Kysely<FillsDatabase>;
export type FillRow = Selectable<FillsDatabase['fills']>;

/**
 * Every column of a fill, by name: what the prepared statements return a fill as. A `*` there would
 * break them once a column is added (shared/src/compiled-statement.ts); the record below fails to
 * compile when a column of the table is missing from it.
 */
const FILL_COLUMNS = Object.keys({
  id: true,
  account_id: true,
  api_key_id: true,
  order_submission_id: true,
  strategy_id: true,
  symbol: true,
  side: true,
  execution_id: true,
  quantity: true,
  price: true,
  fee: true,
  liquidity: true,
  executed_at: true,
  recorded_at: true,
  status: true,
  applied_at: true,
} satisfies Record<keyof FillRow, true>) as (keyof FillRow)[];
/** An applied fill: every read shows only these, and they always carry the order's symbol and side. */
export type AppliedFillRow = FillRow & { symbol: string; side: OrderSide };
type AppliedColumns = { symbol: string; side: OrderSide };

export interface NewPendingFill {
  id: Uuid;
  accountId: string;
  apiKeyId: string;
  orderSubmissionId: Uuid;
  executionId: string;
  quantity: string;
  price: string;
  fee: string;
  liquidity: Liquidity;
  /** Null: the receipt time, i.e. the database's clock at insert. */
  executedAt: Date | null;
}

/**
 * Stores a fill as pending, or nothing when the account already has a fill with this execution id
 * (the unique index decides between concurrent duplicates; the loser reads the winner's row).
 */
export async function insertPendingFill(db: FillsDb, fill: NewPendingFill): Promise<FillRow | undefined> {
  const [stored] = await insertPendingFillStatement(db, fill);
  return stored;
}

const insertPendingFillStatement = compiledStatement((db: FillsDb, p: NewPendingFill) =>
  db
    .insertInto('fills')
    .values({
      id: p.id,
      account_id: p.accountId,
      api_key_id: p.apiKeyId,
      order_submission_id: p.orderSubmissionId,
      execution_id: p.executionId,
      quantity: p.quantity,
      price: p.price,
      fee: p.fee,
      liquidity: p.liquidity,
      executed_at: sql<Date>`coalesce(${p.executedAt}::timestamptz, now())`,
      status: 'PENDING',
    })
    .onConflict((conflict) => conflict.columns(['account_id', 'execution_id']).doNothing())
    .returning(FILL_COLUMNS),
  { prepared: true },
);

/** Pending or applied: idempotency looks at both. */
export async function findFillByExecutionId(db: FillsDb, accountId: string, executionId: string): Promise<FillRow | undefined> {
  return db
    .selectFrom('fills')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('execution_id', '=', executionId)
    .executeTakeFirst();
}

/** What orders says about the order a fill was applied to; its strategy, symbol and side never change. */
export interface OrderDetails {
  strategyId: string | null;
  symbol: string;
  side: OrderSide;
}

/**
 * Marks a pending fill applied, copying the order's details onto it so that positions and filters
 * need no call to orders, and writes its event to the outbox: one statement, so both or neither.
 * Only a PENDING fill changes: undefined when it was applied already (by a concurrent settlement,
 * which waited on the row lock and then found it applied) or dropped, so exactly one settlement
 * records the fill's event.
 *
 * Its commit does not wait for the flush to disk (`synchronous_commit` off for this statement's
 * transaction alone; `set_config` in the statement, since a lone statement has no transaction to
 * `SET LOCAL` in): it is as atomic and visible as any commit, but a crash of the Postgres server in
 * the next fraction of a second can undo it. That is safe only because this write is redone: the
 * pending row and orders' application of the fill were durable before it began, so an undone
 * settlement leaves the fill pending and the recovery sweeper settles it again, identically (its
 * event keeps its id, the fill's). It saves recordFill one of its three waits for a flush.
 */
export async function applyPendingFill(
  db: FillsDb,
  accountId: string,
  fillId: Uuid,
  order: OrderDetails,
  event: OutboxRow,
): Promise<AppliedFillRow | undefined> {
  const [applied] = await applyPendingFillStatement(db, {
    accountId,
    fillId,
    ...order,
    eventId: event.id,
    eventType: event.type,
    eventOccurredAt: event.occurred_at,
    eventData: event.data,
  });
  return applied;
}

interface SettlementParams extends OrderDetails {
  accountId: string;
  fillId: Uuid;
  eventId: string;
  eventType: string;
  eventOccurredAt: Date;
  eventData: string;
}

const applyPendingFillStatement = compiledStatement((db: FillsDb, p: SettlementParams) =>
  db
    .with('applied', (cte) =>
      cte
        .updateTable('fills')
        .set({ status: 'APPLIED', applied_at: sql<Date>`now()`, strategy_id: p.strategyId, symbol: p.symbol, side: p.side })
        .where('account_id', '=', p.accountId)
        .where('id', '=', p.fillId)
        // A literal, so that the plan Postgres keeps for the prepared statement may use the pending fills' index.
        .where('status', '=', sql.lit('PENDING'))
        .returning(FILL_COLUMNS),
    )
    .with('event', (cte) =>
      cte
        .insertInto('outbox')
        .columns(['id', 'account_id', 'type', 'occurred_at', 'data'])
        .expression((eb) =>
          eb
            .selectFrom('applied')
            .select([
              eb.val(p.eventId).as('id'),
              'applied.account_id',
              eb.val(p.eventType).as('type'),
              eb.val(p.eventOccurredAt).as('occurred_at'),
              eb.val(p.eventData).as('data'),
            ]),
        ),
    )
    .with('no_flush_wait', (cte) => cte.selectNoFrom(sql<string>`set_config('synchronous_commit', 'off', true)`.as('synchronous_commit')))
    .selectFrom(['applied', 'no_flush_wait'])
    .select(FILL_COLUMNS.map((column) => `applied.${column}` as const))
    .$narrowType<AppliedColumns>(),
  { prepared: true },
);

/** Drops a fill the orders subgraph refused; an applied fill is never dropped. */
export async function deletePendingFill(db: FillsDb, accountId: string, fillId: Uuid): Promise<void> {
  await db.deleteFrom('fills').where('account_id', '=', accountId).where('id', '=', fillId).where('status', '=', 'PENDING').execute();
}

export async function findAppliedFills(db: FillsDb, accountId: string, ids: readonly Uuid[]): Promise<AppliedFillRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('fills')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', ids)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .execute();
}

/**
 * Oldest first by execution time, then id: the order `OrderSubmission.fills` shows. Ids are UUIDv7
 * with random bits below the millisecond, so fills executed in the same millisecond come in an order
 * that is stable but arbitrary (not necessarily the order they were recorded in).
 */
export async function findAppliedFillsOfOrders(db: FillsDb, accountId: string, orderSubmissionIds: readonly Uuid[]): Promise<AppliedFillRow[]> {
  if (orderSubmissionIds.length === 0) return [];
  return db
    .selectFrom('fills')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('order_submission_id', 'in', orderSubmissionIds)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .orderBy('executed_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export type PositionFillRow = Pick<AppliedFillRow, 'id' | 'strategy_id' | 'symbol' | 'side' | 'quantity' | 'price' | 'fee' | 'executed_at'>;

export async function findAppliedFillsOfStrategies(db: FillsDb, accountId: string, strategyIds: readonly Uuid[]): Promise<PositionFillRow[]> {
  if (strategyIds.length === 0) return [];
  return db
    .selectFrom('fills')
    .select(['id', 'strategy_id', 'symbol', 'side', 'quantity', 'price', 'fee', 'executed_at'])
    .where('account_id', '=', accountId)
    .where('strategy_id', 'in', strategyIds)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .orderBy('executed_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

/**
 * The conditions of a listFills page, as the resolver received them: ids parsed, the symbol spelt
 * as stored. An absent member does not filter; any present one does, the empty symbol included.
 */
export interface FillFilter {
  orderSubmissionId?: Uuid;
  strategyId?: Uuid;
  symbol?: string;
  executedAfter?: Date;
  executedBefore?: Date;
}

/** Newest first on (executed_at, id): unique and immutable, so a page boundary never moves. Fetches `limit` rows. */
export async function listAppliedFills(
  db: FillsDb,
  accountId: string,
  filter: FillFilter,
  page: { after: KeysetPosition | undefined; limit: number },
): Promise<AppliedFillRow[]> {
  let query = db.selectFrom('fills').selectAll().where('account_id', '=', accountId).where('status', '=', 'APPLIED').$narrowType<AppliedColumns>();
  if (filter.orderSubmissionId !== undefined) query = query.where('order_submission_id', '=', filter.orderSubmissionId);
  if (filter.strategyId !== undefined) query = query.where('strategy_id', '=', filter.strategyId);
  if (filter.symbol !== undefined) query = query.where('symbol', '=', filter.symbol);
  if (filter.executedAfter !== undefined) query = query.where('executed_at', '>', filter.executedAfter);
  if (filter.executedBefore !== undefined) query = query.where('executed_at', '<', filter.executedBefore);
  return inKeysetOrder(query, { time: 'executed_at', after: page.after, limit: page.limit }).execute();
}

/**
 * The recovery sweeper's work list: fills still pending after `minAgeMs`, oldest first. The one
 * query not scoped to an account, because recovery works for all of them; every later step is.
 */
export async function findStalePendingFills(db: FillsDb, minAgeMs: number, limit: number): Promise<FillRow[]> {
  return db
    .selectFrom('fills')
    .selectAll()
    .where('status', '=', 'PENDING')
    .where('recorded_at', '<', sql<Date>`now() - ${minAgeMs} * interval '1 millisecond'`)
    .orderBy('recorded_at', 'asc')
    .limit(limit)
    .execute();
}

/** The sweeper's backlog for monitoring: how many fills are pending, and since when the oldest. */
export async function pendingFillsBacklog(db: FillsDb): Promise<{ count: number; oldestRecordedAt: Date | null }> {
  const row = await db
    .selectFrom('fills')
    .select(({ fn }) => [fn.countAll<string>().as('count'), fn.min('recorded_at').as('oldest')])
    .where('status', '=', 'PENDING')
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), oldestRecordedAt: row.oldest };
}
