import type { Decimal } from '@ots/shared/decimal';
import { fail, isDependencyOutage, ok, type Result } from '@ots/shared/errors';
import { newId, type ReceivedId, type Uuid } from '@ots/shared/ids';
import type { Scope } from '@ots/shared/scope';
import { notFoundInAccount } from '@ots/shared/messages';
import { loaderOfGroups } from '@ots/shared/loaders';
import type { EventType } from '@ots/shared/contracts/events';
import { toConnection, type Connection, type KeysetPosition } from '@ots/shared/pagination';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import {
  CANCELLABLE_STATUSES,
  checkStrategyStatus,
  cursorOf,
  decideCancel,
  inWholeMilliseconds,
  syncEndAt,
  decideFill,
  decideReplace,
  duplicateClientOrderId,
  isSameSubmission,
  normaliseFilter,
  strategyUnavailable,
  validateReplacement,
  validateSubmission,
  type FillDecision,
  type FillState,
  type ListPosition,
  type OrderListCursors,
  type OrderDraft,
  type SyncPosition,
  type OrderFilter,
  type OrderSubmissionFilterInput,
  type ReplaceOrderInput,
  type SubmitOrderInput,
} from './domain.ts';
import type { Liquidity, OrderStatus } from './generated/enums.ts';
import { draftOf, fillData, fillStateOf, newOrderRow, orderEvent } from './mappers.ts';
import * as repository from './repository.ts';
import type { OrderPage, OrderRow, OrdersDb } from './repository.ts';
import type { StrategyLookup } from './strategy-lookup.ts';

/**
 * The orders use cases, each `(scope, request)`: each runs the domain rules against the caller's
 * rows, and writes so that it is safe under concurrency (a unique index, a compare-and-set, or a row
 * lock), taking only the locks of the rows it changes.
 */
export type OrdersScope = Scope<OrdersDb>;

/**
 * The type names the status the fill leaves: `filled` when it makes the order FILLED (a late fill
 * completing a cancelled one included), `partially_filled` for any other, a late fill that completes a
 * replaced order too (it stays REPLACED; its `data` shows the quantity filled), so that a consumer that
 * takes an event's type for the order's status is never told FILLED of an order the API shows REPLACED.
 */
const fillEventType = (status: OrderStatus): EventType => (status === 'FILLED' ? 'order_submission.filled' : 'order_submission.partially_filled');

/** What a compare-and-set write answers when the order is no longer the version its decision was made on. */
const CHANGED = Symbol('order changed');

/**
 * Cancels and fills read the order, decide by the transition table, and write only if the order is
 * still the version they read (compare-and-set on `commit_xid`, in one statement with the event):
 * the read takes no lock, and the row lock is held for the writing statement only. If a concurrent
 * write of the same order got in between, the decision is made again under the order's row lock,
 * where nothing can change it: fills of one order come in bursts, and retrying optimistically would
 * cost each of N concurrent writers up to N attempts; under the lock each waits its turn once.
 * Either way only that order's writes wait, never another order's.
 */
async function decideThenWrite<T>(
  db: OrdersDb,
  accountId: string,
  orderId: Uuid,
  attempt: (db: OrdersDb, locked: boolean) => Promise<T | typeof CHANGED>,
): Promise<T> {
  const optimistic = await attempt(db, false);
  if (optimistic !== CHANGED) return optimistic;
  return db.transaction().execute(async (trx) => {
    // Locked first, then read by the attempt in a statement of its own, whose snapshot is taken
    // after the lock: it sees every write of this order (and every application of a fill) committed before.
    await repository.lockOrder(trx, accountId, orderId);
    const locked = await attempt(trx, true);
    if (locked === CHANGED) throw new Error(`order ${orderId} changed while its row lock was held`);
    return locked;
  });
}

/** A submission reusing a clientOrderId: the stored order if it is the same one, else the duplicate error. */
function retried(existing: OrderRow, draft: OrderDraft, clientOrderId: string): Result<OrderRow> {
  if (isSameSubmission(draftOf(existing), draft)) return ok(existing);
  return { ok: false, error: duplicateClientOrderId(clientOrderId) };
}

async function checkStrategy(lookupStrategy: StrategyLookup, strategy: ReceivedId): Promise<Result<void>> {
  // A value that is not a UUID names no strategy: answered without asking the strategies subgraph.
  if (strategy.uuid === undefined) return checkStrategyStatus(strategy.sent, null);
  try {
    return checkStrategyStatus(strategy.uuid, await lookupStrategy(strategy.uuid));
  } catch (error) {
    if (error instanceof SubgraphUnavailableError) return { ok: false, error: strategyUnavailable() };
    throw error;
  }
}

/** submitOrder's input with the strategyId as the client sent it. */
export interface SubmitOrderRequest extends Omit<SubmitOrderInput, 'strategyId'> {
  strategyId?: ReceivedId | null;
}

/**
 * Validation first (an invalid input costs no call and creates nothing), then the retry check (a
 * retry of a stored order is answered from the store, even if its strategy has been paused since),
 * then the strategy, then the insert, where the unique index settles concurrent submissions.
 */
export async function submitOrder(
  scope: OrdersScope & { lookupStrategy: StrategyLookup },
  request: SubmitOrderRequest,
): Promise<Result<OrderRow>> {
  const { db, accountId } = scope;
  const strategy = request.strategyId ?? null;
  const validated = validateSubmission({ ...request, strategyId: strategy?.uuid ?? null });
  if (!validated.ok) return validated;
  const draft = validated.value;
  const { clientOrderId } = draft;
  if (clientOrderId !== null) {
    const existing = await repository.findOrderByClientOrderId(db, accountId, clientOrderId);
    if (existing) {
      // A strategyId that is not a UUID is no stored order's strategy: never a retry.
      return strategy !== null && strategy.uuid === undefined
        ? { ok: false, error: duplicateClientOrderId(clientOrderId) }
        : retried(existing, draft, clientOrderId);
    }
  }
  if (strategy !== null) {
    const checked = await checkStrategy(scope.lookupStrategy, strategy);
    if (!checked.ok) return checked;
  }
  const order = newOrderRow(accountId, draft);
  const inserted = await repository.insertOrder(db, order, orderEvent('order_submission.submitted', order));
  if (inserted) return ok(inserted);
  // Only a clientOrderId can conflict (NULLs never do): a concurrent submission with it committed first.
  const winner = await repository.findOrderByClientOrderId(db, accountId, clientOrderId!);
  if (!winner) throw new Error('insert conflicted on clientOrderId but no order holds it');
  return retried(winner, draft, clientOrderId!);
}

function orderNotFound(id: string): Result<never> {
  return fail('NOT_FOUND', notFoundInAccount('order submission', id), 'id');
}

/** Cancels `order` if it is still that version: the cancelled order, or CHANGED. */
async function writeCancel(db: OrdersDb, order: OrderRow): Promise<OrderRow | typeof CHANGED> {
  const event = orderEvent('order_submission.cancelled', { ...order, status: 'CANCELLED' });
  return (await repository.markCancelled(db, order.account_id, order.id, order.commit_xid, event)) ?? CHANGED;
}

export async function cancelOrderSubmission({ db, accountId }: OrdersScope, id: ReceivedId): Promise<Result<OrderRow>> {
  const orderId = id.uuid;
  if (orderId === undefined) return orderNotFound(id.sent);
  return decideThenWrite(db, accountId, orderId, async (db): Promise<Result<OrderRow> | typeof CHANGED> => {
    const order = await repository.findOrder(db, accountId, orderId);
    if (!order) return orderNotFound(id.sent);
    const decision = decideCancel(order.status, order.id);
    if (decision.kind === 'unchanged') return ok(order);
    if (decision.kind === 'refused') return { ok: false, error: decision.error };
    const cancelled = await writeCancel(db, order);
    return cancelled === CHANGED ? CHANGED : ok(cancelled);
  });
}

export interface FillRequest {
  /** The venue's execution id: an account's fill is recorded once per execution id. */
  executionId: string;
  /** Undefined when the id sent is not a UUID: it names no order. */
  orderSubmissionId: Uuid | undefined;
  quantity: Decimal;
  price: Decimal;
  fee: Decimal;
  liquidity: Liquidity;
  /** When the venue executed the fill; absent: now (after any cancel or replace, so never a late fill). */
  executedAt?: Date | null;
  /** The fills subgraph found no fill of its own with this execution id, after a MAYBE_RECORDED_BEFORE_UPGRADE. */
  notRecordedBeforeUpgrade?: boolean | null;
  /** The caller can be answered MAYBE_RECORDED_BEFORE_UPGRADE (a fills release from before it cannot: rolling upgrades). */
  checksRecordedBeforeUpgrade?: boolean | null;
}

export interface FillResult {
  /**
   * ALREADY_APPLIED: the execution id was recorded before (the caller compares the terms); nothing
   * changed. MAYBE_RECORDED_BEFORE_UPGRADE: nothing decided (see `applyFill`).
   */
  outcome: FillDecision['outcome'] | 'MAYBE_RECORDED_BEFORE_UPGRADE';
  /** The fill as recorded, now or before; null when refused. */
  fill: repository.RecordedFillRow | null;
  /** The order after the call (the recorded fill's, for ALREADY_APPLIED); null when it was not found. */
  order: OrderRow | null;
}

/**
 * The fills subgraph's entry point, and where a fill is decided and recorded: read the order and any
 * fill recorded with the execution id (one statement), decide by the transition table, then one
 * compare-and-set statement writes the order, the fill and both events (see `decideThenWrite`).
 * The execution id's unique index makes a concurrent duplicate fail whole; it is then decided again,
 * and answered with the fill the other request recorded.
 *
 * Applications recorded before migration 005 lack their execution id until the fills subgraph has
 * brought it back (`legacy-fills.ts`). While the account has one, an execution id not found here may
 * be one of them, and deciding it would apply that fill a second time: it is answered
 * MAYBE_RECORDED_BEFORE_UPGRADE, nothing decided, and fills, which keeps every execution id, answers
 * the one it keeps or asks again with `notRecordedBeforeUpgrade`. Only a caller that says it checks
 * (`checksRecordedBeforeUpgrade`) is answered so: a fills release from before cannot read the answer,
 * and during a rolling upgrade is decided as it was then. Such applications are no longer
 * made, so a fill fills does not keep is not one of them, then or later. Once the backfill has run,
 * the question costs a probe of an empty index in the statement that reads the order.
 */
export async function applyFill({ db, accountId }: OrdersScope, fill: FillRequest): Promise<FillResult> {
  const attempt = async (db: OrdersDb, locked: boolean): Promise<FillResult | typeof CHANGED> => {
    const found = await repository.findFillContext(db, accountId, fill.orderSubmissionId, fill.executionId);
    const order = found.order ?? null;
    if (found.recorded) return { outcome: 'ALREADY_APPLIED', fill: found.recorded, order };
    if (found.lacksExecutionIds && fill.checksRecordedBeforeUpgrade && !fill.notRecordedBeforeUpgrade) return { outcome: 'MAYBE_RECORDED_BEFORE_UPGRADE', fill: null, order };
    const decision = decideFill(found.order && fillStateOf(found.order), false, { ...fill, executedAt: fill.executedAt ?? null });
    // A refusal read on a consistent version is final: an order never regains quantity or reopens.
    if (decision.outcome !== 'APPLIED') return { outcome: decision.outcome, fill: null, order };
    try {
      const written = await writeFillApplication(db, found.order!, fill, decision.next);
      return written ? { outcome: 'APPLIED', fill: written.recorded, order: written.order } : CHANGED;
    } catch (error) {
      // A concurrent request recorded this execution id first (and has committed): decided again, it
      // is the retry of that one. Under the lock the failed statement has ended the transaction, so
      // the collision goes up to be read again outside it (below).
      if (repository.isExecutionIdRecorded(error) && !locked) return CHANGED;
      throw error;
    }
  };
  const orderId = fill.orderSubmissionId;
  // An id that is not a UUID names no order (the fills subgraph answers a recorded execution id sent with one).
  if (orderId === undefined) return { outcome: 'NOT_FOUND', fill: null, order: null };
  try {
    return await decideThenWrite(db, accountId, orderId, attempt);
  } catch (error) {
    // Under the order's lock, the execution id was recorded meanwhile on another order: read again, it is there now.
    if (!repository.isExecutionIdRecorded(error)) throw error;
    return (await attempt(db, false)) as FillResult;
  }
}

/** Writes the fill's application on `order` if that is still the order's version; undefined if it is not. */
async function writeFillApplication(db: OrdersDb, order: OrderRow, fill: FillRequest, next: FillState) {
  const event = orderEvent(fillEventType(next.status), {
    ...order,
    status: next.status,
    filled_quantity: next.filledQuantity.toFixed(),
    fill_notional: next.fillNotional.toFixed(),
  });
  // Made after the order's event, so relayed after it; the fill's event takes the fill's id.
  const fillId = newId();
  const fillEvent = { fill: fillData(fillId, order, fill) };
  return repository.recordFillApplication(
    db,
    order.account_id,
    { ...fill, fillId, orderId: order.id, executedAt: fill.executedAt ?? null },
    next,
    order.commit_xid,
    event,
    fillEvent,
  );
}

export interface Replacement {
  /** The new order. */
  order: OrderRow;
  /** The order it replaced, now REPLACED. */
  replaced: OrderRow;
}

/**
 * FIX cancel/replace: checks in this order — the old order exists (NOT_FOUND), the input under
 * submitOrder's rules with the old order's values as defaults (VALIDATION_FAILED), a reused
 * clientOrderId (a retry of this very replace returns its result, anything else is
 * DUPLICATE_CLIENT_ORDER_ID), then, under the old order's lock, the state (ORDER_NOT_REPLACEABLE).
 * One transaction inserts the new order and marks the old one REPLACED: both or neither. It locks
 * the old order's row and writes the new one: nothing else of the account waits. The strategy is
 * not asked: a replace starts no exposure under a new strategy.
 */
export async function replaceOrderSubmission(
  { db, accountId }: OrdersScope,
  id: ReceivedId,
  input: ReplaceOrderInput,
): Promise<Result<Replacement>> {
  const orderId = id.uuid;
  if (orderId === undefined) return orderNotFound(id.sent);
  const old = await repository.findOrder(db, accountId, orderId);
  if (!old) return orderNotFound(id.sent);
  const validated = validateReplacement(draftOf(old), input);
  if (!validated.ok) return validated;
  const draft = validated.value;

  const retriedReplacement = async (existing: OrderRow): Promise<Result<Replacement>> => {
    if (existing.replaces_id !== orderId || !isSameSubmission(draftOf(existing), draft)) {
      return { ok: false, error: duplicateClientOrderId(draft.clientOrderId!) };
    }
    return ok({ order: existing, replaced: (await repository.findOrder(db, accountId, orderId))! });
  };
  if (draft.clientOrderId !== null) {
    const existing = await repository.findOrderByClientOrderId(db, accountId, draft.clientOrderId);
    if (existing) return retriedReplacement(existing);
  }

  const outcome = await db.transaction().execute(async (trx): Promise<Result<Replacement> | 'clientOrderIdTaken'> => {
    const locked = await repository.lockOrder(trx, accountId, orderId);
    if (!locked) return orderNotFound(id.sent);
    const decision = decideReplace(locked.status, locked.id);
    if (decision.kind === 'refused') return { ok: false, error: decision.error };
    const replacement = newOrderRow(accountId, draft, orderId);
    // Made first, so relayed first: the old order is replaced, then its replacement submitted.
    const replacedEvent = orderEvent('order_submission.replaced', { ...locked, status: decision.to, replaced_by: replacement.id });
    const order = await repository.insertOrder(trx, replacement, orderEvent('order_submission.submitted', replacement), locked);
    // Only the clientOrderId can conflict: a concurrent request took it; nothing of ours is kept.
    if (!order) return 'clientOrderIdTaken';
    const replaced = await repository.markReplaced(trx, accountId, orderId, order, replacedEvent);
    return ok({ order, replaced });
  });
  if (outcome === 'clientOrderIdTaken') {
    const winner = await repository.findOrderByClientOrderId(db, accountId, draft.clientOrderId!);
    if (!winner) throw new Error('insert conflicted on clientOrderId but no order holds it');
    return retriedReplacement(winner);
  }
  // A concurrent retry of this replace committed while we waited for the lock: answer as its retry.
  if (!outcome.ok && outcome.error.code === 'ORDER_NOT_REPLACEABLE' && draft.clientOrderId !== null) {
    const winner = await repository.findOrderByClientOrderId(db, accountId, draft.clientOrderId);
    if (winner) return retriedReplacement(winner);
  }
  return outcome;
}

/** cancelOrderSubmissions' filter once the resolver has parsed it: the list's filter, of the members an open order is picked by. */
export type CancelOrdersFilterInput = Pick<OrderSubmissionFilterInput, 'symbol' | 'side' | 'strategyId'>;

/** The most one cancelOrderSubmissions call cancels (contract section 4). */
export const CANCEL_ALL_LIMIT = 500;

export interface CancelAllResult {
  cancelled: OrderRow[];
  hasMore: boolean;
  /**
   * The database stopped answering part-way (contract section 7's TEMPORARILY_UNAVAILABLE): what
   * `cancelled` holds is done and reported, and the call can be repeated for the rest.
   */
  interruptedBy?: Error;
}

/**
 * Cancel-all: the caller's open orders that match, oldest first, at most 500 per call. Each order
 * is cancelled, with its event, by a statement of its own (atomic on its own, one row lock at a
 * time, so a fill of another order never waits for the batch), decided on the order as listed; one
 * that changed since is decided again on its new version, and skipped if a fill, cancel or replace
 * took it out of the open statuses. `hasMore`: open matching orders beyond this call's 500 remain.
 */
export async function cancelOrderSubmissions({ db, accountId }: OrdersScope, input: CancelOrdersFilterInput | null | undefined): Promise<CancelAllResult> {
  // Undefined: no order can match (a symbol no order can have, a strategyId that is not a UUID).
  const filter = normaliseFilter(input);
  if (!filter) return { cancelled: [], hasMore: false };
  const cancelled: OrderRow[] = [];
  try {
    const candidates = await repository.findOrdersInStatuses(db, accountId, CANCELLABLE_STATUSES, filter, CANCEL_ALL_LIMIT + 1);
    for (const candidate of candidates.slice(0, CANCEL_ALL_LIMIT)) {
      const row = await decideThenWrite(db, accountId, candidate.id, async (db, locked) => {
        const order = locked ? await repository.findOrder(db, accountId, candidate.id) : candidate;
        return order && decideCancel(order.status, order.id).kind === 'cancel' ? writeCancel(db, order) : undefined;
      });
      if (row) cancelled.push(row);
    }
    return { cancelled, hasMore: candidates.length > CANCEL_ALL_LIMIT };
  } catch (error) {
    // Each cancel committed on its own: those done stay done, and the client must hear of them.
    if (!isDependencyOutage(error)) throw error;
    return { cancelled, hasMore: true, interruptedBy: error as Error };
  }
}

/** A list's arguments once the resolver has parsed them. */
export interface ListRequest {
  /** Undefined when no order can match. */
  filter: OrderFilter | undefined;
  position: ListPosition;
  size: number;
  /** Seals the cursors to the caller's account. */
  cursors: OrderListCursors;
}

/** Where a sync page starts: its settled stamp, read before it, and the stamp position after which it reads. */
interface SyncStart {
  settled: Date;
  after: KeysetPosition | undefined;
}

/** Reads the settled stamp, and turns a cursor of the sync as it paged by commit order into a stamp position. */
async function syncStart(db: OrdersDb, accountId: string, after: SyncPosition | undefined): Promise<SyncStart> {
  const settled = await repository.readSettledStamp(db);
  if (after === undefined || !('formerCommitPosition' in after)) return { settled, after };
  return { settled, after: syncEndAt(await repository.stampBeforeCommitPosition(db, accountId, after.formerCommitPosition, settled)) };
}

function pageOf(request: ListRequest, sync: SyncStart | undefined): OrderPage | undefined {
  if (!request.filter) return undefined;
  const fetched = { filter: request.filter, limit: request.size + 1 };
  if (request.position.orderBy === 'SUBMITTED_AT_DESC') return { ...fetched, ...request.position };
  return { ...fetched, orderBy: 'UPDATED_AT_ASC', after: sync!.after, settled: sync!.settled };
}

/** How a sync page whose rows are all of one millisecond reads the rest of it, and whether anything settled follows it. */
interface RestOfMillisecond {
  read(after: OrderRow): Promise<OrderRow[]>;
  anyAfter(row: OrderRow): Promise<boolean>;
}

function restOfMillisecond(db: OrdersDb, accountId: string, filter: OrderFilter, settled: Date): RestOfMillisecond {
  return {
    read: (after) => repository.listRestOfMillisecond(db, accountId, filter, settled, after),
    anyAfter: (row) => repository.anySyncChangeAfter(db, accountId, filter, settled, row),
  };
}

/**
 * A page from the `size + 1` rows its query fetched; a sync page in whole milliseconds
 * (`inWholeMilliseconds`), reading the rest of one that the fetched rows do not hold with `rest`
 * (and then asking whether a change follows that millisecond: the fetched rows do not say).
 */
async function connectionOf(
  fetched: readonly OrderRow[],
  request: ListRequest,
  sync: SyncStart | undefined,
  rest: () => RestOfMillisecond,
): Promise<Connection<OrderRow>> {
  const cursorOfRow = (row: OrderRow) => cursorOf(request.position.orderBy, row, request.cursors);
  if (!sync) return toConnection(fetched, request.size, cursorOfRow);
  const whole = inWholeMilliseconds(fetched, request.size);
  const rows = whole.restOf ? [...whole.rows, ...(await rest().read(whole.restOf))] : whole.rows;
  const hasNextPage = whole.restOf ? await rest().anyAfter(rows.at(-1)!) : fetched.length > request.size;
  const connection = toConnection(rows, rows.length, cursorOfRow);
  return {
    ...connection,
    pageInfo: {
      hasNextPage,
      // The sync keeps its place (contract section 4): an empty page answers the position it was asked
      // from; asked from nowhere, the position just after the settled stamp, behind which nothing can
      // still appear.
      get endCursor() {
        return connection.pageInfo.endCursor ?? request.cursors.sync.encode(sync.after ?? syncEndAt(sync.settled));
      },
    },
  };
}

export async function listOrderSubmissions({ db, accountId }: OrdersScope, request: ListRequest): Promise<Connection<OrderRow>> {
  const { position } = request;
  const sync = position.orderBy === 'UPDATED_AT_ASC' ? await syncStart(db, accountId, position.after) : undefined;
  const page = pageOf(request, sync);
  const rest = () => restOfMillisecond(db, accountId, request.filter!, sync!.settled);
  return connectionOf(page ? await repository.listOrders(db, accountId, page) : [], request, sync, rest);
}

/**
 * `Strategy.orderSubmissions` for every strategy of a response in one query: one loader per
 * distinct set of arguments, keyed by strategy id, created per request. A sync loader reads its
 * settled stamp once, before its query, and every strategy's page is bounded by it.
 */
export function strategyOrdersLoaders({ db, accountId }: OrdersScope) {
  const loaders = new Map<string, { sync: Promise<SyncStart> | undefined; load(strategyId: Uuid): Promise<OrderRow[]> }>();
  /** `strategyId` is undefined when the reference's id is not a UUID: it names no strategy. */
  return async (strategyId: Uuid | undefined, request: ListRequest): Promise<Connection<OrderRow>> => {
    const { position } = request;
    const signature = JSON.stringify([request.filter, position, request.size]);
    let loader = loaders.get(signature);
    if (!loader) {
      const sync = position.orderBy === 'UPDATED_AT_ASC' ? syncStart(db, accountId, position.after) : undefined;
      const rows = loaderOfGroups(
        async (strategyIds: readonly Uuid[]) => {
          const page = pageOf(request, await sync);
          return page ? repository.listOrdersOfStrategies(db, accountId, strategyIds, page) : [];
        },
        (row) => row.strategy_id ?? '',
      );
      loader = { sync, load: (id) => rows.load(id) };
      loaders.set(signature, loader);
    }
    const fetched = strategyId === undefined ? [] : await loader.load(strategyId);
    const sync = await loader.sync;
    const rest = () => restOfMillisecond(db, accountId, { ...request.filter!, strategyId }, sync!.settled);
    return connectionOf(fetched, request, sync, rest);
  };
}
