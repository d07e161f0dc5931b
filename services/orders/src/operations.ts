import { Decimal } from '@ots/shared/decimal';
import { fail, ok, type Result } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { notFoundInAccount } from '@ots/shared/messages';
import { loaderOfGroups } from '@ots/shared/loaders';
import { pageSize, toConnection, type Connection } from '@ots/shared/pagination';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import {
  checkStrategyStatus,
  decideCancel,
  decideFill,
  duplicateClientOrderId,
  isSameSubmission,
  strategyUnavailable,
  validateSubmission,
  type FillDecision,
  type FillState,
  type FillToApply,
  type OrderDraft,
  type SubmitOrderInput,
} from './domain.ts';
import {
  cursorOf,
  normaliseFilter,
  parseCursor,
  type OrderSubmissionFilterInput,
  type OrderSubmissionOrder,
} from './listing.ts';
import * as repository from './repository.ts';
import type { OrderPage, OrderRow, OrdersDb } from './repository.ts';
import type { StrategyLookup } from './strategy-lookup.ts';

/**
 * The orders use cases: each runs the domain rules against the caller's rows, inside the
 * transaction and locks that make it safe under concurrency.
 */
export interface OrdersScope {
  db: OrdersDb;
  accountId: string;
}

function decimalOrNull(value: string | null): Decimal | null {
  return value === null ? null : new Decimal(value);
}

export function draftOf(row: OrderRow): OrderDraft {
  return {
    clientOrderId: row.client_order_id,
    strategyId: row.strategy_id,
    symbol: row.symbol,
    side: row.side,
    type: row.type,
    timeInForce: row.time_in_force,
    quantity: new Decimal(row.quantity),
    limitPrice: decimalOrNull(row.limit_price),
    stopPrice: decimalOrNull(row.stop_price),
  };
}

export function fillStateOf(row: OrderRow): FillState {
  return {
    status: row.status,
    quantity: new Decimal(row.quantity),
    filledQuantity: new Decimal(row.filled_quantity),
    fillNotional: new Decimal(row.fill_notional),
  };
}

/** A submission reusing a clientOrderId: the stored order if it is the same one, else the duplicate error. */
function retried(existing: OrderRow, draft: OrderDraft, clientOrderId: string): Result<OrderRow> {
  if (isSameSubmission(draftOf(existing), draft)) return ok(existing);
  return { ok: false, error: duplicateClientOrderId(clientOrderId) };
}

async function checkStrategy(lookupStrategy: StrategyLookup, strategyId: string): Promise<Result<void>> {
  // A value that is not a UUID names no strategy: answered without asking the strategies subgraph.
  if (!isUuid(strategyId)) return checkStrategyStatus(strategyId, null);
  try {
    return checkStrategyStatus(strategyId, await lookupStrategy(strategyId));
  } catch (error) {
    if (error instanceof SubgraphUnavailableError) return { ok: false, error: strategyUnavailable() };
    throw error;
  }
}

/**
 * Validation first (an invalid input costs no call and creates nothing), then the retry check (a
 * retry of a stored order is answered from the store, even if its strategy has been paused since),
 * then the strategy, then the insert, where the unique index settles concurrent submissions.
 */
export async function submitOrder(
  scope: OrdersScope & { lookupStrategy: StrategyLookup },
  input: SubmitOrderInput,
): Promise<Result<OrderRow>> {
  const { db, accountId } = scope;
  const validated = validateSubmission(input);
  if (!validated.ok) return validated;
  const draft = validated.value;
  const { clientOrderId } = draft;
  if (clientOrderId !== null) {
    const existing = await repository.findOrderByClientOrderId(db, accountId, clientOrderId);
    if (existing) return retried(existing, draft, clientOrderId);
  }
  if (draft.strategyId !== null) {
    const strategy = await checkStrategy(scope.lookupStrategy, draft.strategyId);
    if (!strategy.ok) return strategy;
  }
  const inserted = await repository.insertOrder(db, accountId, draft);
  if (inserted) return ok(inserted);
  // Only a clientOrderId can conflict (NULLs never do): a concurrent submission with it committed first.
  const winner = await repository.findOrderByClientOrderId(db, accountId, clientOrderId!);
  if (!winner) throw new Error('insert conflicted on clientOrderId but no order holds it');
  return retried(winner, draft, clientOrderId!);
}

function orderNotFound(id: string): Result<never> {
  return fail('NOT_FOUND', notFoundInAccount('order submission', id), 'id');
}

export async function cancelOrderSubmission({ db, accountId }: OrdersScope, id: string): Promise<Result<OrderRow>> {
  if (!isUuid(id)) return orderNotFound(id);
  return db.transaction().execute(async (trx) => {
    const order = await repository.lockOrder(trx, accountId, id);
    if (!order) return orderNotFound(id);
    const decision = decideCancel(order.status, order.id);
    switch (decision.kind) {
      case 'unchanged':
        return ok(order);
      case 'refused':
        return { ok: false, error: decision.error };
      case 'cancel':
        return ok(await repository.markCancelled(trx, accountId, id));
    }
  });
}

export interface FillRequest extends FillToApply {
  fillId: string;
  orderSubmissionId: string;
}

export interface FillResult {
  outcome: FillDecision['outcome'];
  /** The order after the call; null when it was not found. */
  order: OrderRow | null;
}

/**
 * The fills subgraph's entry point. One transaction: the order row is locked first, so concurrent
 * fills of one order (and a cancel) apply one after another, each seeing the previous one's result;
 * the fill's application row makes a repeated fill id a no-op.
 */
export async function applyFill({ db, accountId }: OrdersScope, fill: FillRequest): Promise<FillResult> {
  if (!isUuid(fill.orderSubmissionId)) return { outcome: 'NOT_FOUND', order: null };
  const orderId = fill.orderSubmissionId.toLowerCase();
  return db.transaction().execute(async (trx) => {
    const order = await repository.lockOrder(trx, accountId, orderId);
    const alreadyApplied = order !== undefined && (await repository.isFillApplied(trx, accountId, fill.fillId, orderId));
    const decision = decideFill(order && fillStateOf(order), alreadyApplied, fill);
    if (decision.outcome !== 'APPLIED') return { outcome: decision.outcome, order: order ?? null };
    const updated = await repository.recordFillApplication(
      trx,
      accountId,
      { fillId: fill.fillId, orderId, quantity: fill.quantity, price: fill.price },
      decision.next,
    );
    return { outcome: 'APPLIED', order: updated };
  });
}

export interface ListArguments {
  filter?: OrderSubmissionFilterInput | null;
  orderBy?: OrderSubmissionOrder | null;
  first?: number | null;
  after?: string | null;
}

/** Checks the arguments (a bad `first` or cursor is a top-level BAD_USER_INPUT) and fixes the page to fetch. */
function pageOf(args: ListArguments): { page: OrderPage | undefined; size: number; orderBy: OrderSubmissionOrder } {
  const size = pageSize(args.first);
  const orderBy = args.orderBy ?? 'SUBMITTED_AT_DESC';
  const after = parseCursor(args.after, orderBy);
  const filter = normaliseFilter(args.filter);
  return { page: filter && { filter, orderBy, after, limit: size + 1 }, size, orderBy };
}

export async function listOrderSubmissions({ db, accountId }: OrdersScope, args: ListArguments): Promise<Connection<OrderRow>> {
  const { page, size, orderBy } = pageOf(args);
  const rows = page ? await repository.listOrders(db, accountId, page) : [];
  return toConnection(rows, size, (row) => cursorOf(orderBy, row));
}

/**
 * `Strategy.orderSubmissions` for every strategy of a response in one query: one loader per
 * distinct set of arguments, keyed by strategy id, created per request.
 */
export function strategyOrdersLoaders({ db, accountId }: OrdersScope) {
  const loaders = new Map<string, { load(strategyId: string): Promise<OrderRow[]> }>();
  return async (strategyId: string, args: ListArguments): Promise<Connection<OrderRow>> => {
    const { page, size, orderBy } = pageOf(args);
    // Strategy ids come from the strategies subgraph in Postgres' lower-case form; anything else names no strategy.
    if (!page || !isUuid(strategyId)) return toConnection([], size, (row) => cursorOf(orderBy, row));
    const signature = JSON.stringify(page);
    let loader = loaders.get(signature);
    if (!loader) {
      loader = loaderOfGroups(
        (strategyIds) => repository.listOrdersOfStrategies(db, accountId, strategyIds, page),
        (row) => row.strategy_id ?? '',
      );
      loaders.set(signature, loader);
    }
    return toConnection(await loader.load(strategyId.toLowerCase()), size, (row) => cursorOf(orderBy, row));
  };
}
