import { sql, type ExpressionBuilder, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import { formatDecimal, type Decimal } from '@ots/shared/decimal';
import { newId } from '@ots/shared/ids';
import type { FillState, OrderDraft, OrderSide, OrderStatus, OrderType, TimeInForce } from './domain.ts';
import type { CursorPosition, OrderFilter, OrderSubmissionOrder } from './listing.ts';

/** pg returns `numeric` as a string (exact) and `timestamptz` as a Date. */
export interface OrdersDatabase {
  order_submissions: {
    id: string;
    account_id: string;
    client_order_id: string | null;
    strategy_id: string | null;
    symbol: string;
    side: OrderSide;
    type: OrderType;
    time_in_force: TimeInForce;
    quantity: string;
    limit_price: string | null;
    stop_price: string | null;
    status: OrderStatus;
    filled_quantity: string;
    fill_notional: string;
    submitted_at: Date;
    updated_at: Date;
    cancelled_at: Date | null;
  };
  fill_applications: {
    account_id: string;
    fill_id: string;
    order_submission_id: string;
    quantity: string;
    price: string;
    applied_at: Date;
  };
  account_write_clocks: {
    account_id: string;
    last_stamp: Date;
  };
}

export type OrdersDb = Kysely<OrdersDatabase>;
export type OrderRow = Selectable<OrdersDatabase['order_submissions']>;

type OrdersQuery = SelectQueryBuilder<OrdersDatabase, 'order_submissions', OrderRow>;

const wire = (value: Decimal): string => formatDecimal(value);
const wireOrNull = (value: Decimal | null): string | null => (value === null ? null : formatDecimal(value));

/**
 * The account's write clock: call it inside a write transaction, after locking any existing order
 * row, and stamp the write with the instant it returns.
 *
 * Why: the incremental sync (`UPDATED_AT_ASC` with `updatedAfter`) is only complete if no change
 * can become visible with an `updatedAt` earlier than one a client has already seen. With plain
 * `now()` (transaction start) a slow transaction commits after a faster one that began later, and
 * a client that synced in between skips it for good. Here each stamp is taken under the row lock of
 * the account's clock row, which is held until commit: the next write of the account waits for
 * this one to commit before it takes its own stamp. So, per account, stamps are strictly
 * increasing (at least 1 ms apart, even at the same millisecond or if the system clock steps back)
 * and in commit order, and a row is visible before any row stamped later is. This costs
 * serialising the writes of one account, which are short, single-row transactions.
 */
export async function stampWrite(db: OrdersDb, accountId: string): Promise<Date> {
  const row = await db
    .insertInto('account_write_clocks')
    .values({ account_id: accountId, last_stamp: sql<Date>`clock_timestamp()` })
    .onConflict((conflict) =>
      conflict.column('account_id').doUpdateSet({
        last_stamp: sql<Date>`greatest(clock_timestamp()::timestamptz(3), account_write_clocks.last_stamp + interval '1 millisecond')`,
      }),
    )
    .returning('last_stamp')
    .executeTakeFirstOrThrow();
  return row.last_stamp;
}

export async function findOrder(db: OrdersDb, accountId: string, id: string): Promise<OrderRow | undefined> {
  return db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

/** For the entity loader: one query for a batch of ids, ids must be UUIDs. */
export async function findOrders(db: OrdersDb, accountId: string, ids: readonly string[]): Promise<OrderRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).where('id', 'in', ids).execute();
}

export async function findOrderByClientOrderId(db: OrdersDb, accountId: string, clientOrderId: string): Promise<OrderRow | undefined> {
  return db
    .selectFrom('order_submissions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('client_order_id', '=', clientOrderId)
    .executeTakeFirst();
}

/** Locks the order for the rest of the transaction; cancels and fills of one order are applied one at a time. */
export async function lockOrder(db: OrdersDb, accountId: string, id: string): Promise<OrderRow | undefined> {
  return db
    .selectFrom('order_submissions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Inserts the order unless the account already has one with its clientOrderId: the unique index
 * decides, so concurrent identical submissions create one order. Undefined means that one exists.
 */
export async function insertOrder(db: OrdersDb, accountId: string, draft: OrderDraft, stamp: Date): Promise<OrderRow | undefined> {
  return db
    .insertInto('order_submissions')
    .values({
      id: newId(stamp.getTime()),
      account_id: accountId,
      client_order_id: draft.clientOrderId,
      strategy_id: draft.strategyId,
      symbol: draft.symbol,
      side: draft.side,
      type: draft.type,
      time_in_force: draft.timeInForce,
      quantity: wire(draft.quantity),
      limit_price: wireOrNull(draft.limitPrice),
      stop_price: wireOrNull(draft.stopPrice),
      status: 'SUBMITTED',
      filled_quantity: '0',
      fill_notional: '0',
      submitted_at: stamp,
      updated_at: stamp,
    })
    .onConflict((conflict) => conflict.columns(['account_id', 'client_order_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function markCancelled(db: OrdersDb, accountId: string, id: string, stamp: Date): Promise<OrderRow> {
  return db
    .updateTable('order_submissions')
    .set({ status: 'CANCELLED', cancelled_at: stamp, updated_at: stamp })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function isFillApplied(db: OrdersDb, accountId: string, fillId: string, orderId: string): Promise<boolean> {
  const row = await db
    .selectFrom('fill_applications')
    .select('fill_id')
    .where('account_id', '=', accountId)
    .where('fill_id', '=', fillId)
    .where('order_submission_id', '=', orderId)
    .executeTakeFirst();
  return row !== undefined;
}

export interface FillApplication {
  fillId: string;
  orderId: string;
  quantity: Decimal;
  price: Decimal;
}

/** Records the fill as applied and writes the order's new fill state, stamped with the account clock. */
export async function recordFillApplication(
  db: OrdersDb,
  accountId: string,
  fill: FillApplication,
  next: FillState,
  stamp: Date,
): Promise<OrderRow> {
  await db
    .insertInto('fill_applications')
    .values({
      account_id: accountId,
      fill_id: fill.fillId,
      order_submission_id: fill.orderId,
      quantity: wire(fill.quantity),
      price: wire(fill.price),
      applied_at: stamp,
    })
    .execute();
  return db
    .updateTable('order_submissions')
    .set({
      status: next.status,
      filled_quantity: wire(next.filledQuantity),
      fill_notional: next.fillNotional.toFixed(),
      updated_at: stamp,
    })
    .where('account_id', '=', accountId)
    .where('id', '=', fill.orderId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface OrderPage {
  filter: OrderFilter;
  orderBy: OrderSubmissionOrder;
  after: CursorPosition | undefined;
  /** Rows to fetch: the page size plus one, which only says whether more exist. */
  limit: number;
}

function filtered(query: OrdersQuery, accountId: string, page: OrderPage): OrdersQuery {
  const { filter, after } = page;
  let scoped = query.where('account_id', '=', accountId);
  if (filter.statuses) scoped = scoped.where('status', 'in', filter.statuses);
  if (filter.symbol !== undefined) scoped = scoped.where('symbol', '=', filter.symbol);
  if (filter.side) scoped = scoped.where('side', '=', filter.side);
  if (filter.strategyId !== undefined) scoped = scoped.where('strategy_id', '=', filter.strategyId);
  if (filter.clientOrderId !== undefined) scoped = scoped.where('client_order_id', '=', filter.clientOrderId);
  if (filter.submittedAfter) scoped = scoped.where('submitted_at', '>', filter.submittedAfter);
  if (filter.submittedBefore) scoped = scoped.where('submitted_at', '<', filter.submittedBefore);
  if (filter.updatedAfter) scoped = scoped.where('updated_at', '>', filter.updatedAfter);
  if (page.orderBy === 'UPDATED_AT_ASC') {
    if (after) {
      scoped = scoped.where((eb: ExpressionBuilder<OrdersDatabase, 'order_submissions'>) =>
        eb(eb.refTuple('updated_at', 'id'), '>', eb.tuple(after.at, after.id)),
      );
    }
    return scoped.orderBy('updated_at', 'asc').orderBy('id', 'asc').limit(page.limit);
  }
  if (after) {
    scoped = scoped.where((eb: ExpressionBuilder<OrdersDatabase, 'order_submissions'>) =>
      eb(eb.refTuple('submitted_at', 'id'), '<', eb.tuple(after.at, after.id)),
    );
  }
  return scoped.orderBy('submitted_at', 'desc').orderBy('id', 'desc').limit(page.limit);
}

/** One keyset page of the account's orders: page N costs what page 1 costs. */
export async function listOrders(db: OrdersDb, accountId: string, page: OrderPage): Promise<OrderRow[]> {
  return filtered(db.selectFrom('order_submissions').selectAll(), accountId, page).execute();
}

/**
 * The same page for each of several strategies in one statement (`Strategy.orderSubmissions` over
 * a list of strategies): a lateral join runs the per-strategy keyset query once per strategy id,
 * each served by the (account_id, strategy_id, submitted_at, id) index.
 */
export async function listOrdersOfStrategies(
  db: OrdersDb,
  accountId: string,
  strategyIds: readonly string[],
  page: OrderPage,
): Promise<OrderRow[]> {
  if (strategyIds.length === 0) return [];
  const direction = page.orderBy === 'UPDATED_AT_ASC' ? 'asc' : 'desc';
  return db
    .selectFrom(sql<{ wanted_strategy_id: string }>`unnest(${[...strategyIds]}::uuid[])`.as('wanted_strategy_id'))
    .innerJoinLateral(
      (eb) =>
        filtered(
          eb.selectFrom('order_submissions').selectAll().whereRef('strategy_id', '=', 'wanted_strategy_id.wanted_strategy_id') as OrdersQuery,
          accountId,
          page,
        ).as('orders_of_strategy'),
      (join) => join.onTrue(),
    )
    .selectAll('orders_of_strategy')
    .orderBy('orders_of_strategy.strategy_id')
    .orderBy(page.orderBy === 'UPDATED_AT_ASC' ? 'orders_of_strategy.updated_at' : 'orders_of_strategy.submitted_at', direction)
    .orderBy('orders_of_strategy.id', direction)
    .execute();
}
