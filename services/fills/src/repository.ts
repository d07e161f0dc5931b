import { sql, type Generated, type Kysely, type Selectable } from 'kysely';
import { compiledStatement } from '@ots/shared/compiled-statement';
import type { Uuid } from '@ots/shared/ids';
import { inKeysetOrder, type KeysetPosition } from '@ots/shared/pagination';
import type { FillFilter } from './domain.ts';
import type { Liquidity, OrderSide } from './generated/enums.ts';

type FillStatus = 'PENDING' | 'APPLIED';

export interface FillsDatabase {
  fills: {
    id: Uuid;
    account_id: string;
    order_submission_id: Uuid;
    strategy_id: string | null;
    /** The order's; null only on a fill left pending by a release before issue 25. */
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

/** A fill as orders recorded it, with the order's details it copies: what the fills subgraph keeps. */
export interface KeptFill {
  id: Uuid;
  accountId: string;
  orderSubmissionId: Uuid;
  strategyId: string | null;
  symbol: string;
  side: OrderSide;
  executionId: string;
  quantity: string;
  price: string;
  fee: string;
  liquidity: Liquidity;
  executedAt: Date;
  recordedAt: Date;
}

/**
 * Keeps fills orders recorded, in one statement, once each: a fill already kept (by the request
 * that recorded it, a retry of it, or the recovery route; one fill per id and per execution id) is left as it is, so whichever comes first
 * keeps it and the rest change nothing. The same fill always comes with the same values (orders
 * recorded them once).
 */
export async function keepFills(db: FillsDb, fills: readonly KeptFill[]): Promise<void> {
  if (fills.length === 0) return;
  await keepFillsStatement(db, {
    ids: fills.map((fill) => fill.id),
    accountIds: fills.map((fill) => fill.accountId),
    orderSubmissionIds: fills.map((fill) => fill.orderSubmissionId),
    strategyIds: fills.map((fill) => fill.strategyId ?? ''),
    symbols: fills.map((fill) => fill.symbol),
    sides: fills.map((fill) => fill.side),
    executionIds: fills.map((fill) => fill.executionId),
    quantities: fills.map((fill) => fill.quantity),
    prices: fills.map((fill) => fill.price),
    fees: fills.map((fill) => fill.fee),
    liquidities: fills.map((fill) => fill.liquidity),
    executedAts: fills.map((fill) => fill.executedAt.toISOString()),
    recordedAts: fills.map((fill) => fill.recordedAt.toISOString()),
  });
}

type KeptFillColumns = {
  [Name in 'ids' | 'accountIds' | 'orderSubmissionIds' | 'strategyIds' | 'symbols' | 'sides' | 'executionIds' | 'quantities' | 'prices' | 'fees' | 'liquidities' | 'executedAts' | 'recordedAts']: readonly string[];
};

// One array per column (unnest), so that one prepared statement keeps a batch of any size.
const keepFillsStatement = compiledStatement(
  (db: FillsDb, p: KeptFillColumns) =>
    db
      .insertInto('fills')
      .columns([
        'id',
        'account_id',
        'order_submission_id',
        'strategy_id',
        'symbol',
        'side',
        'execution_id',
        'quantity',
        'price',
        'fee',
        'liquidity',
        'executed_at',
        'recorded_at',
        'status',
        'applied_at',
      ])
      .expression(
        sql`select id, account_id, order_submission_id, nullif(strategy_id, '')::uuid, symbol, side, execution_id, quantity, price, fee,
          liquidity, executed_at, recorded_at, 'APPLIED', recorded_at
        from unnest(${p.ids}::uuid[], ${p.accountIds}::uuid[], ${p.orderSubmissionIds}::uuid[], ${p.strategyIds}::text[], ${p.symbols}::text[],
          ${p.sides}::text[], ${p.executionIds}::text[], ${p.quantities}::numeric[], ${p.prices}::numeric[], ${p.fees}::numeric[],
          ${p.liquidities}::text[], ${p.executedAts}::timestamptz[], ${p.recordedAts}::timestamptz[])
          as kept(id, account_id, order_submission_id, strategy_id, symbol, side, execution_id, quantity, price, fee, liquidity, executed_at, recorded_at)`,
      )
      // Any unique index, not only the id's: the request and orders' relay may bring the same fill at
      // the same moment, and the insert that loses the race may meet it first on the execution id's index.
      .onConflict((conflict) => conflict.doNothing()),
  { prepared: true },
);

/** The account's fill with this execution id, if this subgraph keeps one (every fill kept is applied since migration 006). */
export async function findFillByExecutionId(db: FillsDb, accountId: string, executionId: string): Promise<AppliedFillRow | undefined> {
  return db
    .selectFrom('fills')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('execution_id', '=', executionId)
    .where('status', '=', 'APPLIED')
    .$narrowType<AppliedColumns>()
    .executeTakeFirst();
}

/** Fills of any account by id: what the backfill of orders' applications made before its migration 005 brings back. */
export async function findKeptFillsById(
  db: FillsDb,
  ids: readonly Uuid[],
): Promise<Pick<FillRow, 'id' | 'account_id' | 'execution_id' | 'fee' | 'liquidity' | 'executed_at'>[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('fills').select(['id', 'account_id', 'execution_id', 'fee', 'liquidity', 'executed_at']).where('id', 'in', ids).execute();
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
