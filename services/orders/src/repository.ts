import { sql, type Generated, type Kysely, type QueryCreator, type RawBuilder, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { FeedPosition } from '@ots/shared/commit-order';
import { compiledStatement } from '@ots/shared/compiled-statement';
import { formatDecimal, type Decimal } from '@ots/shared/decimal';
import type { Uuid } from '@ots/shared/ids';
import type { EventType, RecordedFillFields } from '@ots/shared/contracts/events';
import type { OutboxDatabase } from '@ots/shared/outbox';
import { inKeysetOrder, keysetPosition, type KeysetPosition } from '@ots/shared/pagination';
import type { FillState, OrderFilter } from './domain.ts';
import type { Liquidity, OrderSide, OrderStatus, OrderType, TimeInForce } from './generated/enums.ts';

/** pg returns `numeric` as a string (exact), `timestamptz` as a Date and `uuid` in lower case (a `Uuid`). */
export interface OrdersDatabase extends OutboxDatabase {
  order_submissions: {
    id: Uuid;
    account_id: string;
    client_order_id: string | null;
    strategy_id: Uuid | null;
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
    replaced_at: Date | null;
    /** On a replaced order: the order that replaced it. */
    replaced_by: Uuid | null;
    /** On a replacement: the order it replaced. */
    replaces_id: Uuid | null;
    /** The writer's transaction id (`xid8`, as a decimal string), set by a trigger on every write. */
    commit_xid: Generated<string>;
  };
  /** Each fill orders decided to apply, as recorded (its id is the fill's id in the fills subgraph too). */
  fill_applications: {
    account_id: string;
    fill_id: string;
    order_submission_id: Uuid;
    quantity: string;
    price: string;
    /** When it was recorded: the order's change stamp. */
    applied_at: Date;
    /** Null only on applications recorded before orders recorded whole fills (migration 005). */
    execution_id: string | null;
    fee: string | null;
    liquidity: Liquidity | null;
    executed_at: Date | null;
  };
}

export type OrdersDb = Kysely<OrdersDatabase>;
export type OrderRow = Selectable<OrdersDatabase['order_submissions']>;

/**
 * Every column of an order, by name: what the prepared statements return an order as. A `*` there
 * would break them once a column is added (shared/src/compiled-statement.ts); the record below fails
 * to compile when a column of the table is missing from it.
 */
const ORDER_COLUMNS = Object.keys({
  id: true,
  account_id: true,
  client_order_id: true,
  strategy_id: true,
  symbol: true,
  side: true,
  type: true,
  time_in_force: true,
  quantity: true,
  limit_price: true,
  stop_price: true,
  status: true,
  filled_quantity: true,
  fill_notional: true,
  submitted_at: true,
  updated_at: true,
  cancelled_at: true,
  replaced_at: true,
  replaced_by: true,
  replaces_id: true,
  commit_xid: true,
} satisfies Record<keyof OrderRow, true>) as (keyof OrderRow)[];

type OrdersQuery = SelectQueryBuilder<OrdersDatabase, 'order_submissions', OrderRow>;

const wire = (value: Decimal): string => formatDecimal(value);

/**
 * The instant a change takes effect: the database clock when the statement runs, to the millisecond
 * (read before any row lock it waits for), and at least 1 ms after the row's previous change, so that
 * each order's `updatedAt` strictly increases. Read while the statement runs, never before its
 * transaction began: the sync's horizon relies on it (`readSettledStamp`).
 */
const changeStamp = sql<Date>`greatest(clock.now, order_submissions.updated_at + interval '1 millisecond')`;

/** An update of orders that may use `changeStamp`: the clock is read once per statement, so every column stamped with it agrees. */
const stampedUpdate = (db: QueryCreator<OrdersDatabase>) => db.updateTable('order_submissions').from(sql`(select clock_timestamp()::timestamptz(3) as now)`.as('clock'));

/** The columns of an order that its writes stamp with the database's clock. */
type OrderTimes = 'submitted_at' | 'updated_at' | 'cancelled_at' | 'replaced_at';

/**
 * The event of one order write: its type, and the order as the API will show it after the write,
 * but for its times, which only the statement knows (the database's clock stamps them).
 */
export interface OrderEvent {
  /** Time-ordered: events of one transaction are relayed in the order their ids were made. */
  id: Uuid;
  type: EventType;
  data: Record<string, unknown>;
}

/** A time as `JSON.stringify` writes a Date (ISO-8601, UTC, milliseconds), so that the event and the API agree to the character. */
const isoTimeOf = (time: RawBuilder<unknown> | ReturnType<typeof sql.ref>) => sql<string>`to_char(${time} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const isoTime = (column: OrderTimes) => isoTimeOf(sql.ref(`changed.${column}`));

/** An order event's data with the times of the order the statement wrote (its `changed` CTE). */
const orderDataOfChanged = (eventData: string) => sql<string>`${eventData}::jsonb || jsonb_build_object(
  'submittedAt', ${isoTime('submitted_at')}, 'updatedAt', ${isoTime('updated_at')},
  'cancelledAt', ${isoTime('cancelled_at')}, 'replacedAt', ${isoTime('replaced_at')})`;

/** An order event's values, bound to the statement that writes it (`eventOfChangedOrder`). */
interface EventParams {
  eventId: Uuid;
  eventType: EventType;
  /** The event's data but for the order's times, as JSON text. */
  eventData: string;
}

const eventParams = (event: OrderEvent): EventParams => ({ eventId: event.id, eventType: event.type, eventData: JSON.stringify(event.data) });

/**
 * The outbox row of the event, for a statement whose `changed` CTE is the order it wrote: written in
 * the same statement, so a write and its event commit together with no transaction around them
 * (one round trip, and the row lock is held for the statement only), and with the written row's
 * own times. No row changed, no event.
 */
function eventOfChangedOrder(p: EventParams) {
  return (db: QueryCreator<OrdersDatabase & { changed: OrderRow }>) =>
    db
      .insertInto('outbox')
      .columns(['id', 'account_id', 'type', 'occurred_at', 'data'])
      .expression((eb) =>
        eb
          .selectFrom('changed')
          .select([
            sql<string>`${p.eventId}::uuid`.as('id'),
            'changed.account_id',
            sql<string>`${p.eventType}`.as('type'),
            'changed.updated_at',
            orderDataOfChanged(p.eventData).as('data'),
          ]),
      );
}

const findOrderStatement = compiledStatement((db: OrdersDb, p: { accountId: string; id: Uuid }) =>
  db.selectFrom('order_submissions').selectAll().where('account_id', '=', p.accountId).where('id', '=', p.id),
);

export async function findOrder(db: OrdersDb, accountId: string, id: Uuid): Promise<OrderRow | undefined> {
  const [order] = await findOrderStatement(db, { accountId, id });
  return order;
}

/** For the entity loader: one query for a batch of ids. */
export async function findOrders(db: OrdersDb, accountId: string, ids: readonly Uuid[]): Promise<OrderRow[]> {
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

/** Locks the order for the rest of the transaction: a replace decides on it and writes both orders as one unit. */
export async function lockOrder(db: OrdersDb, accountId: string, id: Uuid): Promise<OrderRow | undefined> {
  return db
    .selectFrom('order_submissions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/** A fill as orders recorded it: what the fills subgraph keeps, and a retry is compared with. */
export interface RecordedFillRow {
  fill_id: string;
  execution_id: string;
  order_submission_id: Uuid;
  quantity: string;
  price: string;
  fee: string;
  liquidity: Liquidity;
  executed_at: Date;
  recorded_at: Date;
}

type FillContextRow = { [Column in keyof OrderRow]: OrderRow[Column] | null } & {
  [Column in keyof RecordedFillRow as `recorded_${Column}`]: RecordedFillRow[Column] | null;
} & { lacks_execution_ids: boolean };

const findFillContextStatement = compiledStatement(
  (db: OrdersDb, p: { accountId: string; id: Uuid | null; executionId: string }) => ({
    compile: () =>
      sql<FillContextRow>`
        select ${sql.join(ORDER_COLUMNS.map((column) => sql.ref(`o.${column}`)))},
          ${sql.join(RECORDED_FILL_COLUMNS.map(([column, source]) => sql`${sql.ref(`recorded.${source}`)} as ${sql.ref(`recorded_${column}`)}`))},
          -- A probe of a partial index that is empty once the backfill has run (migration 006).
          exists (select 1 from fill_applications as legacy where legacy.account_id = ${p.accountId} and legacy.execution_id is null)
            as lacks_execution_ids
        from (select 1) as one
        left join fill_applications as recorded on recorded.account_id = ${p.accountId} and recorded.execution_id = ${p.executionId}
        -- The recorded fill's order if there is one (a retry names it), else the order asked for.
        left join order_submissions as o on o.account_id = ${p.accountId} and o.id = coalesce(recorded.order_submission_id, ${p.id}::uuid)
      `.compile(db),
  }),
  { prepared: true },
);

/** Each column of a recorded fill, and where an application holds it. */
const RECORDED_FILL_COLUMNS = Object.entries({
  fill_id: 'fill_id',
  execution_id: 'execution_id',
  order_submission_id: 'order_submission_id',
  quantity: 'quantity',
  price: 'price',
  fee: 'fee',
  liquidity: 'liquidity',
  executed_at: 'executed_at',
  recorded_at: 'applied_at',
} satisfies Record<keyof RecordedFillRow, keyof OrdersDatabase['fill_applications']>);

/**
 * What a fill is decided on, read in one statement (one snapshot): the fill recorded with this
 * execution id, if any, and the order — the recorded fill's, or else the one asked for — and whether
 * the account has applications recorded before migration 005 that still lack their execution id (a
 * fill not found here may be one of them). No lock: the write that follows only succeeds if the
 * order is still this version (see `recordFillApplication`), and the execution id's unique index
 * refuses a second recording.
 */
export async function findFillContext(
  db: OrdersDb,
  accountId: string,
  id: Uuid | undefined,
  executionId: string,
): Promise<{ order: OrderRow | undefined; recorded: RecordedFillRow | undefined; lacksExecutionIds: boolean }> {
  const [row] = await findFillContextStatement(db, { accountId, id: id ?? null, executionId });
  const order = Object.fromEntries(ORDER_COLUMNS.map((column) => [column, row![column]])) as OrderRow;
  const recorded = Object.fromEntries(RECORDED_FILL_COLUMNS.map(([column]) => [column, row![`recorded_${column}` as keyof FillContextRow]]));
  return {
    order: row!.id === null ? undefined : order,
    recorded: row!.recorded_fill_id === null ? undefined : (recorded as unknown as RecordedFillRow),
    lacksExecutionIds: row!.lacks_execution_ids,
  };
}

/** A new order's row, but for its times, which the insert stamps. */
export type NewOrder = Omit<OrderRow, OrderTimes | 'commit_xid'>;

/**
 * Inserts the order, with its event, unless the account already has one with its clientOrderId:
 * the unique index decides, so concurrent identical submissions create one order (and one event).
 * Undefined means that one exists. One statement, no lock but the new row's: submissions of an
 * account never wait for each other.
 */
export async function insertOrder(db: OrdersDb, order: NewOrder, event: OrderEvent, replacing?: OrderRow): Promise<OrderRow | undefined> {
  const [inserted] = await insertOrderStatement(db, { ...order, ...eventParams(event), replacedUpdatedAt: replacing?.updated_at ?? null });
  return inserted;
}

const insertOrderStatement = compiledStatement((db: OrdersDb, p: NewOrder & EventParams & { replacedUpdatedAt: Date | null }) =>
  db
    // The clock while the statement runs, like `changeStamp`: `now()`, the transaction's start, is
    // taken by a statement outside a transaction as it arrives, a moment before that start is
    // published in pg_stat_activity, where the sync's horizon looks (`readSettledStamp`). A
    // replacement is submitted when the order it replaces is replaced (`markReplaced`), which is a
    // change of that order, so 1 ms after its last change at the earliest.
    .with('clock', (qb) =>
      qb.selectNoFrom(sql<Date>`greatest(clock_timestamp()::timestamptz(3), ${p.replacedUpdatedAt}::timestamptz + interval '1 millisecond')`.as('now')),
    )
    .with('changed', (qb) =>
      qb
        .insertInto('order_submissions')
        .values({
          id: p.id,
          account_id: p.account_id,
          client_order_id: p.client_order_id,
          strategy_id: p.strategy_id,
          symbol: p.symbol,
          side: p.side,
          type: p.type,
          time_in_force: p.time_in_force,
          quantity: p.quantity,
          limit_price: p.limit_price,
          stop_price: p.stop_price,
          status: p.status,
          filled_quantity: p.filled_quantity,
          fill_notional: p.fill_notional,
          replaced_by: p.replaced_by,
          replaces_id: p.replaces_id,
          // One value for both (a CTE read twice is evaluated once).
          submitted_at: sql<Date>`(select now from clock)`,
          updated_at: sql<Date>`(select now from clock)`,
          cancelled_at: null,
          replaced_at: null,
        })
        .onConflict((conflict) => conflict.columns(['account_id', 'client_order_id']).doNothing())
        .returning(ORDER_COLUMNS),
    )
    // The event reads only `changed`: the clock is no table of its (a type-only cast).
    .with('event', (qb) => eventOfChangedOrder(p)(qb as unknown as QueryCreator<OrdersDatabase & { changed: OrderRow }>))
    .selectFrom('changed')
    .select(ORDER_COLUMNS),
  { prepared: true },
);

/**
 * Cancels the order, with its event, if it is still the version read (`commit_xid`): a
 * compare-and-set, so the decision made on that version holds. Undefined: it changed meanwhile.
 * Takes the order's row lock for the statement only; a concurrent writer of the same order is
 * waited for, then its new version fails the comparison. The clock is read once the lock is held
 * (`locked` first): an UPDATE's own values are computed before it waits for a row, and a cancel
 * that waited behind a transaction that only locked the order would take effect later than its
 * `cancelledAt` said, refusing a fill executed in between as executed after the cancel.
 */
export async function markCancelled(db: OrdersDb, accountId: string, id: Uuid, version: string, event: OrderEvent): Promise<OrderRow | undefined> {
  const [cancelled] = await markCancelledStatement(db, { accountId, id, version, ...eventParams(event) });
  return cancelled;
}

const markCancelledStatement = compiledStatement((db: OrdersDb, p: { accountId: string; id: Uuid; version: string } & EventParams) =>
  db
    .with('locked', (qb) =>
      qb
        .selectFrom('order_submissions')
        .select('id')
        .where('account_id', '=', p.accountId)
        .where('id', '=', p.id)
        .where('commit_xid', '=', p.version)
        .forUpdate(),
    )
    .with('clock', (qb) => qb.selectFrom('locked').select(sql<Date>`clock_timestamp()::timestamptz(3)`.as('now')))
    .with('changed', (qb) =>
      qb
        .updateTable('order_submissions')
        .from('clock')
        .set({ status: 'CANCELLED', cancelled_at: changeStamp, updated_at: changeStamp })
        .where('order_submissions.account_id', '=', p.accountId)
        .where('order_submissions.id', '=', p.id)
        .where('order_submissions.commit_xid', '=', p.version)
        .returning(ORDER_COLUMNS),
    )
    // The event reads only `changed`: `locked` and `clock` are no tables of its (a type-only cast).
    .with('event', (qb) => eventOfChangedOrder(p)(qb as unknown as QueryCreator<OrdersDatabase & { changed: OrderRow }>))
    .selectFrom('changed')
    .select(ORDER_COLUMNS),
  { prepared: true },
);

/**
 * Marks the order REPLACED by `replacement`, with its event; the caller holds the order's lock and has
 * decided on it. Replaced when its replacement was submitted (`insertOrder` stamped that after the
 * order's last change), so that the `replaced` event, relayed first, is not later than the
 * replacement's `submitted`, and `replacedAt` is the replacement's `submittedAt`.
 */
export async function markReplaced(db: OrdersDb, accountId: string, id: Uuid, replacement: OrderRow, event: OrderEvent): Promise<OrderRow> {
  const [replaced] = await markReplacedStatement(db, { accountId, id, replacedBy: replacement.id, at: replacement.submitted_at, ...eventParams(event) });
  if (!replaced) throw new Error(`order ${id} to mark replaced is not in account ${accountId}`);
  return replaced;
}

const markReplacedStatement = compiledStatement((db: OrdersDb, p: { accountId: string; id: Uuid; replacedBy: Uuid; at: Date } & EventParams) =>
  db
    .with('changed', (qb) =>
      qb
        .updateTable('order_submissions')
        .set({ status: 'REPLACED', replaced_at: p.at, replaced_by: p.replacedBy, updated_at: p.at })
        .where('order_submissions.account_id', '=', p.accountId)
        .where('order_submissions.id', '=', p.id)
        .returningAll('order_submissions'),
    )
    .with('event', eventOfChangedOrder(p))
    .selectFrom('changed')
    .selectAll(),
);

/** The account's orders in `statuses` that match, oldest first (cancel-all's candidates). */
export async function findOrdersInStatuses(
  db: OrdersDb,
  accountId: string,
  statuses: readonly OrderStatus[],
  filter: Pick<OrderFilter, 'symbol' | 'side' | 'strategyId'>,
  limit: number,
): Promise<OrderRow[]> {
  let query = db.selectFrom('order_submissions').selectAll().where('account_id', '=', accountId).where('status', 'in', statuses);
  if (filter.symbol !== undefined) query = query.where('symbol', '=', filter.symbol);
  if (filter.side !== undefined) query = query.where('side', '=', filter.side);
  if (filter.strategyId !== undefined) query = query.where('strategy_id', '=', filter.strategyId);
  return query.orderBy('submitted_at', 'asc').orderBy('id', 'asc').limit(limit).execute();
}

export interface FillApplication {
  /** The fill's id, minted by orders when it records the fill (the fills subgraph keeps it under this id). */
  fillId: Uuid;
  executionId: string;
  orderId: Uuid;
  quantity: Decimal;
  price: Decimal;
  fee: Decimal;
  liquidity: Liquidity;
  /** Null: when it was recorded (the statement's clock). */
  executedAt: Date | null;
}

/**
 * The `fill.recorded` event of a fill (contract section 6, `fillRecordedData` in
 * shared/src/contracts/events.ts): the fill as the API shows it but for its times, and under
 * `orderSubmission` the order's data as in its own event. The statement adds the times and the
 * order, which only it knows.
 */
export interface FillEvent {
  fill: RecordedFillFields;
}

/**
 * Writes the order's new fill state, records the fill and writes the order's event and the fill's
 * `fill.recorded`, in one statement, if the order is still the version the decision was made on
 * (`commit_xid`): a compare-and-set. The fill and the events are inserted only when the update
 * happened. Undefined: the order changed meanwhile, nothing written. A second recording of the
 * execution id fails whole on its unique index (`isExecutionIdRecorded`).
 */
export async function recordFillApplication(
  db: OrdersDb,
  accountId: string,
  fill: FillApplication,
  next: FillState,
  version: string,
  event: OrderEvent,
  fillEvent: FillEvent,
): Promise<{ order: OrderRow; recorded: RecordedFillRow } | undefined> {
  const [row] = await recordFillApplicationStatement(db, {
    accountId,
    orderId: fill.orderId,
    version,
    status: next.status,
    filledQuantity: wire(next.filledQuantity),
    fillNotional: next.fillNotional.toFixed(),
    cancelledAt: next.cancelledAt,
    fillId: fill.fillId,
    executionId: fill.executionId,
    quantity: wire(fill.quantity),
    price: wire(fill.price),
    fee: wire(fill.fee),
    liquidity: fill.liquidity,
    executedAt: fill.executedAt,
    fillEventData: JSON.stringify(fillEvent.fill),
    ...eventParams(event),
  });
  if (!row) return undefined;
  const { recorded_executed_at, recorded_at, ...order } = row;
  return {
    order,
    recorded: {
      fill_id: fill.fillId,
      execution_id: fill.executionId,
      order_submission_id: fill.orderId,
      quantity: wire(fill.quantity),
      price: wire(fill.price),
      fee: wire(fill.fee),
      liquidity: fill.liquidity,
      executed_at: recorded_executed_at,
      recorded_at,
    },
  };
}

interface FillApplicationParams extends EventParams {
  accountId: string;
  orderId: Uuid;
  version: string;
  status: OrderStatus;
  filledQuantity: string;
  fillNotional: string;
  cancelledAt: Date | null;
  fillId: Uuid;
  executionId: string;
  quantity: string;
  price: string;
  fee: string;
  liquidity: Liquidity;
  executedAt: Date | null;
  fillEventData: string;
}

const recordFillApplicationStatement = compiledStatement((db: OrdersDb, p: FillApplicationParams) =>
  db
    .with('changed', (qb) =>
      stampedUpdate(qb)
        .set({
          status: p.status,
          filled_quantity: p.filledQuantity,
          fill_notional: p.fillNotional,
          // A late fill that completes a cancelled order clears its cancelledAt.
          cancelled_at: p.cancelledAt,
          updated_at: changeStamp,
        })
        .where('order_submissions.account_id', '=', p.accountId)
        .where('order_submissions.id', '=', p.orderId)
        .where('order_submissions.commit_xid', '=', p.version)
        .returning(ORDER_COLUMNS),
    )
    .with('event', eventOfChangedOrder(p))
    .with('application', (qb) =>
      qb
        .insertInto('fill_applications')
        .columns(['account_id', 'fill_id', 'execution_id', 'order_submission_id', 'quantity', 'price', 'fee', 'liquidity', 'executed_at', 'applied_at'])
        .expression((eb) =>
          eb
            .selectFrom('changed')
            .select([
              'changed.account_id',
              sql<string>`${p.fillId}::text`.as('fill_id'),
              sql<string>`${p.executionId}::text`.as('execution_id'),
              'changed.id',
              sql<string>`${p.quantity}::numeric`.as('quantity'),
              sql<string>`${p.price}::numeric`.as('price'),
              sql<string>`${p.fee}::numeric`.as('fee'),
              sql<string>`${p.liquidity}::text`.as('liquidity'),
              // Absent: received now, the instant the order changes, so never before a cancel (not a late fill).
              sql<Date>`coalesce(${p.executedAt}::timestamptz, changed.updated_at)`.as('executed_at'),
              'changed.updated_at',
            ]),
        )
        .returning(['fill_id', 'executed_at', 'applied_at']),
    )
    .with('fill_event', (qb) =>
      qb
        .insertInto('outbox')
        .columns(['id', 'account_id', 'type', 'occurred_at', 'data'])
        .expression((eb) =>
          eb
            .selectFrom(['changed', 'application'])
            .select([
              sql<string>`application.fill_id::uuid`.as('id'),
              'changed.account_id',
              sql<string>`'fill.recorded'`.as('type'),
              'application.applied_at',
              sql<string>`${p.fillEventData}::jsonb || jsonb_build_object(
                'executedAt', ${isoTimeOf(sql.ref('application.executed_at'))},
                'recordedAt', ${isoTimeOf(sql.ref('application.applied_at'))},
                'orderSubmission', ${orderDataOfChanged(p.eventData)})`.as('data'),
            ]),
        ),
    )
    .selectFrom(['changed', 'application'])
    .select(ORDER_COLUMNS.map((column) => `changed.${column}` as const))
    .select([sql<Date>`application.executed_at`.as('recorded_executed_at'), sql<Date>`application.applied_at`.as('recorded_at')]),
  { prepared: true },
);

/** The error of `recordFillApplication` when the account has recorded the execution id already (a concurrent request won): nothing was written. */
export function isExecutionIdRecorded(error: unknown): boolean {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return code === UNIQUE_VIOLATION && constraint === 'fill_applications_execution_id';
}

const UNIQUE_VIOLATION = '23505';

/** A fill recorded before migration 005, as the fills subgraph keeps it: what its application lacks. */
export interface LegacyFillTerms {
  accountId: Uuid;
  fillId: Uuid;
  executionId: string;
  fee: string;
  liquidity: Liquidity;
  executedAt: Date;
}

/**
 * Gives applications recorded before migration 005 the terms they lack, in one statement; an
 * application that has them already is left as it is. One whose execution id another application of
 * the account holds is left without: that fill was applied twice before the backfill existed, and is
 * for a person to repair (the route logs it). Returns how many it completed.
 */
export async function completeLegacyApplications(db: OrdersDb, fills: readonly LegacyFillTerms[]): Promise<number> {
  if (fills.length === 0) return 0;
  const result = await sql`
    update fill_applications as application
    set execution_id = kept.execution_id, fee = kept.fee, liquidity = kept.liquidity, executed_at = kept.executed_at
    from unnest(${fills.map((fill) => fill.accountId)}::uuid[], ${fills.map((fill) => fill.fillId)}::text[],
      ${fills.map((fill) => fill.executionId)}::text[], ${fills.map((fill) => fill.fee)}::numeric[],
      ${fills.map((fill) => fill.liquidity)}::text[], ${fills.map((fill) => fill.executedAt.toISOString())}::timestamptz[])
      as kept(account_id, fill_id, execution_id, fee, liquidity, executed_at)
    where application.account_id = kept.account_id and application.fill_id = kept.fill_id and application.execution_id is null
      and not exists (select 1 from fill_applications as taken where taken.account_id = kept.account_id and taken.execution_id = kept.execution_id)
  `.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** The next applications, in key order after `after`, that lack their execution id (migration 006's index). */
export async function findApplicationsLackingExecutionId(
  db: OrdersDb,
  after: { accountId: Uuid; fillId: string } | null,
  limit: number,
): Promise<{ account_id: string; fill_id: string }[]> {
  let query = db.selectFrom('fill_applications').select(['account_id', 'fill_id']).where('execution_id', 'is', null);
  if (after) query = query.where(sql<boolean>`(account_id, fill_id) > (${after.accountId}::uuid, ${after.fillId})`);
  return query.orderBy('account_id').orderBy('fill_id').limit(limit).execute();
}

/** A page of a list: where it starts in its ordering, and what it keeps. */
export type OrderPage = {
  filter: OrderFilter;
  /** Rows to fetch: the page size plus one, which only says whether more exist. */
  limit: number;
} & (
  | { orderBy: 'SUBMITTED_AT_DESC'; after: KeysetPosition | undefined }
  | {
      orderBy: 'UPDATED_AT_ASC';
      after: KeysetPosition | undefined;
      /** The settled stamp read before the page (`readSettledStamp`): the page holds no change stamped later. */
      settled: Date;
    }
);

function filtered<O>(query: SelectQueryBuilder<OrdersDatabase, 'order_submissions', O>, accountId: string, page: OrderPage): SelectQueryBuilder<OrdersDatabase, 'order_submissions', O> {
  const { filter } = page;
  let scoped = query.where('account_id', '=', accountId);
  if (filter.statuses) scoped = scoped.where('status', 'in', filter.statuses);
  if (filter.symbol !== undefined) scoped = scoped.where('symbol', '=', filter.symbol);
  if (filter.side) scoped = scoped.where('side', '=', filter.side);
  if (filter.strategyId !== undefined) scoped = scoped.where('strategy_id', '=', filter.strategyId);
  if (filter.clientOrderId !== undefined) scoped = scoped.where('client_order_id', '=', filter.clientOrderId);
  if (filter.submittedAfter) scoped = scoped.where('submitted_at', '>', filter.submittedAfter);
  if (filter.submittedBefore) scoped = scoped.where('submitted_at', '<', filter.submittedBefore);
  if (filter.updatedAfter) scoped = scoped.where('updated_at', '>', filter.updatedAfter);
  if (page.orderBy === 'UPDATED_AT_ASC') return inStampOrder(scoped, page);
  return inKeysetOrder(scoped, { time: 'submitted_at', after: page.after, limit: page.limit });
}

/**
 * The sync's order: oldest change first by `(updated_at, id)`, after the cursor, and only changes
 * stamped at or before the settled stamp, which are all committed and visible, and behind which no
 * change can still appear (`readSettledStamp`). A keyset page on `(account_id, updated_at, id)`.
 */
function inStampOrder<O>(
  query: SelectQueryBuilder<OrdersDatabase, 'order_submissions', O>,
  page: Extract<OrderPage, { orderBy: 'UPDATED_AT_ASC' }>,
): SelectQueryBuilder<OrdersDatabase, 'order_submissions', O> {
  let ordered = query.where('updated_at', '<=', page.settled);
  if (page.after) ordered = ordered.where(sql<boolean>`(updated_at, id) > (${page.after.at}, ${page.after.id})`);
  return ordered.orderBy('updated_at').orderBy('id').limit(page.limit);
}

/** The most rows of one millisecond a sync page holds beyond its `first` (`inWholeMilliseconds`). */
const MILLISECOND_ROWS = 10_000;

/**
 * The sync's rows of `after`'s millisecond that follow it, for a page that is that whole millisecond
 * (`inWholeMilliseconds`): more than `first` changes of the account in one millisecond.
 */
export async function listRestOfMillisecond(db: OrdersDb, accountId: string, filter: OrderFilter, settled: Date, after: OrderRow): Promise<OrderRow[]> {
  const rest: OrderPage = { orderBy: 'UPDATED_AT_ASC', filter, settled, after: keysetPosition(after.updated_at, after.id), limit: MILLISECOND_ROWS };
  return filtered(db.selectFrom('order_submissions').selectAll(), accountId, rest).where('updated_at', '=', after.updated_at).execute();
}

/** Whether the sync, bounded by its settled stamp, holds a change after `row`. */
export async function anySyncChangeAfter(db: OrdersDb, accountId: string, filter: OrderFilter, settled: Date, row: OrderRow): Promise<boolean> {
  const next: OrderPage = { orderBy: 'UPDATED_AT_ASC', filter, settled, after: keysetPosition(row.updated_at, row.id), limit: 1 };
  return (await filtered(db.selectFrom('order_submissions').selectAll(), accountId, next).execute()).length > 0;
}

/** One keyset page of the account's orders: page N costs what page 1 costs. */
export async function listOrders(db: OrdersDb, accountId: string, page: OrderPage): Promise<OrderRow[]> {
  return filtered(db.selectFrom('order_submissions').selectAll(), accountId, page).execute();
}

/**
 * The incremental sync's horizon (contract section 4: a client that keeps the last `updatedAt` it
 * saw gets every change since): the latest stamp every change at or before which has committed, and
 * behind which no change can still appear. Read before the page, in a statement of its own, so that
 * the page's snapshot, taken later, sees every such change.
 *
 * Why it holds. A change is stamped by the database clock while its statement runs (`changeStamp`,
 * and a new order's insert), so after its transaction has begun and the backend has published that
 * start in `pg_stat_activity`. Here the clock is read first, then `pg_stat_activity` (the subquery
 * needs the clock's value, so it runs after it): H = the earlier of the clock and the oldest
 * `xact_start` among the other backends of the orders processes (the same database, user and
 * `application_name`: every orders process names its connections alike, and only they write orders).
 * A write in flight then either had published its start, at or after H, or publishes it later than
 * the clock was read; either way its stamps are at or after H, and, rounded to the millisecond, at
 * or after H truncated to it. A write that begins later stamps later still. So the millisecond
 * before truncated H is settled: a change stamped at or before it was made by a transaction that had
 * ended, committed (a backend clears its `xact_start` after its commit is visible), when
 * `pg_stat_activity` was read. A psql session or another service's long transaction does not hold
 * it back. It needs `track_activities` (on by default).
 */
export async function readSettledStamp(db: OrdersDb): Promise<Date> {
  const { rows } = await sql<{ settled: Date }>`
    select date_trunc('milliseconds', coalesce((
        select min(xact_start) from pg_stat_activity
        where datname = current_database() and usename = current_user and pid <> pg_backend_pid()
          and application_name = current_setting('application_name') and xact_start < clock.now
      ), clock.now)) - interval '1 millisecond' as settled
    from (select clock_timestamp() as now offset 0) as clock`.execute(db);
  return rows[0]!.settled;
}

/**
 * A stamp a sync cursor issued before the sync paged by stamps can continue from, with nothing
 * missed: the client holding it has every change committed at or before its commit position, and
 * not one after. So it continues just before the earliest stamp among the account's rows written
 * after that position, or from the settled stamp if that is earlier: a write still in flight stamps
 * after it. A few changes the client had may come again; an upgrade pays that once.
 */
export async function stampBeforeCommitPosition(db: OrdersDb, accountId: string, former: FeedPosition, settled: Date): Promise<Date> {
  const { rows } = await sql<{ at: Date }>`
    select least(${settled}::timestamptz, min(updated_at) - interval '1 millisecond') as at
    from order_submissions
    where account_id = ${accountId} and (commit_xid, id) > (${former.xid}::xid8, ${former.id}::uuid)`.execute(db);
  return rows[0]!.at;
}

/**
 * The same page for each of several strategies in one statement (`Strategy.orderSubmissions` over
 * a list of strategies): a lateral join runs the per-strategy keyset query once per strategy id,
 * each served by the (account_id, strategy_id, submitted_at, id) index.
 */
export async function listOrdersOfStrategies(
  db: OrdersDb,
  accountId: string,
  strategyIds: readonly Uuid[],
  page: OrderPage,
): Promise<OrderRow[]> {
  if (strategyIds.length === 0) return [];
  const direction = page.orderBy === 'UPDATED_AT_ASC' ? 'asc' : 'desc';
  return db
    .selectFrom(sql<{ wanted_strategy_id: Uuid }>`unnest(${[...strategyIds]}::uuid[])`.as('wanted_strategy_id'))
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
