import { sql, type Generated, type Kysely, type Selectable } from 'kysely';
import { isUuid } from '@ots/shared/ids';
import type { OutboxDatabase } from '@ots/shared/outbox';
import type { Liquidity, OrderSide } from './domain.ts';

export type FillStatus = 'PENDING' | 'APPLIED';

export interface FillsDatabase extends OutboxDatabase {
  fills: {
    id: string;
    account_id: string;
    api_key_id: string;
    order_submission_id: string;
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
/** An applied fill: every read shows only these, and they always carry the order's symbol and side. */
export type AppliedFillRow = FillRow & { symbol: string; side: OrderSide };
type AppliedColumns = { symbol: string; side: OrderSide };

export interface NewPendingFill {
  id: string;
  accountId: string;
  apiKeyId: string;
  orderSubmissionId: string;
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
  return db
    .insertInto('fills')
    .values({
      id: fill.id,
      account_id: fill.accountId,
      api_key_id: fill.apiKeyId,
      order_submission_id: fill.orderSubmissionId,
      execution_id: fill.executionId,
      quantity: fill.quantity,
      price: fill.price,
      fee: fill.fee,
      liquidity: fill.liquidity,
      executed_at: fill.executedAt ?? sql<Date>`now()`,
      status: 'PENDING',
    })
    .onConflict((conflict) => conflict.columns(['account_id', 'execution_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

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
 * need no call to orders. Only a PENDING fill changes: undefined when it was applied already (by a
 * concurrent settlement, which waited on the row lock and then found it applied) or dropped, so
 * exactly one settlement records the fill's event.
 */
export async function markPendingFillApplied(db: FillsDb, accountId: string, fillId: string, order: OrderDetails): Promise<AppliedFillRow | undefined> {
  return db
    .updateTable('fills')
    .set({ status: 'APPLIED', applied_at: sql<Date>`now()`, strategy_id: order.strategyId, symbol: order.symbol, side: order.side })
    .where('account_id', '=', accountId)
    .where('id', '=', fillId)
    .where('status', '=', 'PENDING')
    .returningAll()
    .$narrowType<AppliedColumns>()
    .executeTakeFirst();
}

/** Drops a fill the orders subgraph refused; an applied fill is never dropped. */
export async function deletePendingFill(db: FillsDb, accountId: string, fillId: string): Promise<void> {
  await db.deleteFrom('fills').where('account_id', '=', accountId).where('id', '=', fillId).where('status', '=', 'PENDING').execute();
}

export async function findAppliedFills(db: FillsDb, accountId: string, ids: readonly string[]): Promise<AppliedFillRow[]> {
  const uuids = ids.filter(isUuid);
  if (uuids.length === 0) return [];
  return db
    .selectFrom('fills')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', 'in', uuids)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .execute();
}

/**
 * Oldest first by execution time, then id: the order `OrderSubmission.fills` shows. Ids are UUIDv7
 * with random bits below the millisecond, so fills executed in the same millisecond come in an order
 * that is stable but arbitrary (not necessarily the order they were recorded in).
 */
export async function findAppliedFillsOfOrders(db: FillsDb, accountId: string, orderSubmissionIds: readonly string[]): Promise<AppliedFillRow[]> {
  const uuids = orderSubmissionIds.filter(isUuid);
  if (uuids.length === 0) return [];
  return db
    .selectFrom('fills')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('order_submission_id', 'in', uuids)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .orderBy('executed_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export type PositionFillRow = Pick<AppliedFillRow, 'id' | 'strategy_id' | 'symbol' | 'side' | 'quantity' | 'price' | 'fee' | 'executed_at'>;

export async function findAppliedFillsOfStrategies(db: FillsDb, accountId: string, strategyIds: readonly string[]): Promise<PositionFillRow[]> {
  const uuids = strategyIds.filter(isUuid);
  if (uuids.length === 0) return [];
  return db
    .selectFrom('fills')
    .select(['id', 'strategy_id', 'symbol', 'side', 'quantity', 'price', 'fee', 'executed_at'])
    .where('account_id', '=', accountId)
    .where('strategy_id', 'in', uuids)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .orderBy('executed_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

/** Normalised (see normaliseFillFilter): an absent member does not filter; any present one does, the empty string included. */
export interface FillFilter {
  orderSubmissionId?: string;
  strategyId?: string;
  symbol?: string;
  executedAfter?: Date;
  executedBefore?: Date;
}

/** Where the previous page ended, newest-first: the last row's execution time and id. */
export interface FillKeyset {
  executedAt: Date;
  id: string;
}

/** Newest first on (executed_at, id): unique and immutable, so a page boundary never moves. Fetches `limit` rows. */
export async function listAppliedFills(
  db: FillsDb,
  accountId: string,
  filter: FillFilter,
  limit: number,
  after: FillKeyset | undefined,
): Promise<AppliedFillRow[]> {
  // An id that is not a UUID names no order or strategy: the list is empty, not a Postgres error.
  if (
    (filter.orderSubmissionId !== undefined && !isUuid(filter.orderSubmissionId)) ||
    (filter.strategyId !== undefined && !isUuid(filter.strategyId))
  ) {
    return [];
  }
  let query = db.selectFrom('fills').selectAll().where('account_id', '=', accountId).where('status', '=', 'APPLIED').$narrowType<AppliedColumns>();
  if (filter.orderSubmissionId !== undefined) query = query.where('order_submission_id', '=', filter.orderSubmissionId);
  if (filter.strategyId !== undefined) query = query.where('strategy_id', '=', filter.strategyId);
  if (filter.symbol !== undefined) query = query.where('symbol', '=', filter.symbol);
  if (filter.executedAfter !== undefined) query = query.where('executed_at', '>', filter.executedAfter);
  if (filter.executedBefore !== undefined) query = query.where('executed_at', '<', filter.executedBefore);
  if (after) {
    query = query.where(({ eb, refTuple, tuple }) => eb(refTuple('executed_at', 'id'), '<', tuple(after.executedAt, after.id)));
  }
  return query.orderBy('executed_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
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
