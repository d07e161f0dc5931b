import { Decimal, roundDerived } from '@ots/shared/decimal';
import { strictlyBeforeBound } from '@ots/shared/scalars';
import type { FeedPosition } from '@ots/shared/commit-order';
import type { AccountKeysetCursors } from '@ots/shared/sealed-cursors';
import { fail, ok, payloadError, type PayloadError, type Result } from '@ots/shared/errors';
import type { ReceivedId, Uuid } from '@ots/shared/ids';
import {
  characterCount,
  idempotencyKeyReused,
  mustBeGreaterThanZero,
  mustBeLengthBetween,
  notFoundInAccount,
  wrongState,
} from '@ots/shared/messages';
import { cursorTag, keysetPosition, type KeysetPosition } from '@ots/shared/pagination';
import { storedSymbolOf, SYMBOL_CHARACTERS, SYMBOL_MAX_LENGTH } from '@ots/shared/symbols';
import type { OrderSide, OrderStatus, OrderSubmissionOrder, OrderType, TimeInForce } from './generated/enums.ts';

/**
 * The rules of order submissions as plain functions: what a valid submission is, when a retry is
 * the same order, and every state transition (contract sections 2 and 3).
 */

export type StrategyStatus = 'ACTIVE' | 'PAUSED' | 'ARCHIVED';

const DEFAULT_TIME_IN_FORCE: TimeInForce = 'DAY';

const CLIENT_ORDER_ID = /^[A-Za-z0-9._:-]+$/;
const CLIENT_ORDER_ID_MAX_LENGTH = 64;

const TYPES_WITH_LIMIT_PRICE: ReadonlySet<OrderType> = new Set(['LIMIT', 'STOP_LIMIT']);
const TYPES_WITH_STOP_PRICE: ReadonlySet<OrderType> = new Set(['STOP', 'STOP_LIMIT']);

/** submitOrder's input once the scalars and the resolver have parsed it. */
export interface SubmitOrderInput {
  clientOrderId?: string | null;
  strategyId?: Uuid | null;
  symbol: string;
  side: OrderSide;
  type: OrderType;
  timeInForce?: TimeInForce | null;
  quantity: Decimal;
  limitPrice?: Decimal | null;
  stopPrice?: Decimal | null;
}

/** A valid submission in its normal form: what is stored, and what a retry is compared with. */
export interface OrderDraft {
  clientOrderId: string | null;
  strategyId: Uuid | null;
  symbol: string;
  side: OrderSide;
  type: OrderType;
  timeInForce: TimeInForce;
  quantity: Decimal;
  limitPrice: Decimal | null;
  stopPrice: Decimal | null;
}

function invalid(field: string, message: string): Result<never> {
  return fail('VALIDATION_FAILED', message, field);
}

function checkClientOrderId(value: string): Result<string> {
  const length = characterCount(value);
  if (length < 1 || length > CLIENT_ORDER_ID_MAX_LENGTH) {
    return invalid('clientOrderId', mustBeLengthBetween('clientOrderId', 1, CLIENT_ORDER_ID_MAX_LENGTH, length));
  }
  if (!CLIENT_ORDER_ID.test(value)) {
    return invalid('clientOrderId', 'clientOrderId may contain only letters A-Z and a-z, digits, ".", "_", ":" and "-"');
  }
  return ok(value);
}

function checkSymbol(value: string): Result<string> {
  const length = characterCount(value);
  if (length < 1 || length > SYMBOL_MAX_LENGTH) return invalid('symbol', mustBeLengthBetween('symbol', 1, SYMBOL_MAX_LENGTH, length));
  if (!SYMBOL_CHARACTERS.test(value)) {
    return invalid('symbol', `symbol "${value}" may contain only letters, digits, ".", "/" and "-"`);
  }
  return ok(value.toUpperCase());
}

function checkPrice(
  field: 'limitPrice' | 'stopPrice',
  value: Decimal | null | undefined,
  type: OrderType,
  typesThatNeedIt: ReadonlySet<OrderType>,
): Result<Decimal | null> {
  const needed = typesThatNeedIt.has(type);
  if (value === null || value === undefined) {
    return needed ? invalid(field, `${field} is required for ${type} orders`) : ok(null);
  }
  if (!needed) return invalid(field, `${field} is not allowed on ${type} orders`);
  if (value.lte(0)) return invalid(field, mustBeGreaterThanZero(field));
  return ok(value);
}

/**
 * Checks every rule of a submission that needs nothing but the input, in the input's field order,
 * and returns the first one broken. The strategy is checked afterwards, by the caller.
 */
export function validateSubmission(input: SubmitOrderInput): Result<OrderDraft> {
  let clientOrderId: string | null = null;
  if (input.clientOrderId !== null && input.clientOrderId !== undefined) {
    const checked = checkClientOrderId(input.clientOrderId);
    if (!checked.ok) return checked;
    clientOrderId = checked.value;
  }
  const symbol = checkSymbol(input.symbol);
  if (!symbol.ok) return symbol;
  if (input.quantity.lte(0)) return invalid('quantity', mustBeGreaterThanZero('quantity'));
  const limitPrice = checkPrice('limitPrice', input.limitPrice, input.type, TYPES_WITH_LIMIT_PRICE);
  if (!limitPrice.ok) return limitPrice;
  const stopPrice = checkPrice('stopPrice', input.stopPrice, input.type, TYPES_WITH_STOP_PRICE);
  if (!stopPrice.ok) return stopPrice;
  return ok({
    clientOrderId,
    strategyId: input.strategyId ?? null,
    symbol: symbol.value,
    side: input.side,
    type: input.type,
    timeInForce: input.timeInForce ?? DEFAULT_TIME_IN_FORCE,
    quantity: input.quantity,
    limitPrice: limitPrice.value,
    stopPrice: stopPrice.value,
  });
}

/** replaceOrderSubmission's input once the scalars have parsed it: every member defaults to the old order's value. */
export interface ReplaceOrderInput {
  quantity?: Decimal | null;
  limitPrice?: Decimal | null;
  stopPrice?: Decimal | null;
  timeInForce?: TimeInForce | null;
  clientOrderId?: string | null;
}

/**
 * The replacement of `old`: symbol, side, type and strategy inherited, the rest from the input or
 * else the old order, under submitOrder's rules (a limit price on a MARKET order is refused as
 * there). The clientOrderId is never inherited: it names one order.
 */
export function validateReplacement(old: OrderDraft, input: ReplaceOrderInput): Result<OrderDraft> {
  return validateSubmission({
    clientOrderId: input.clientOrderId ?? null,
    strategyId: old.strategyId,
    symbol: old.symbol,
    side: old.side,
    type: old.type,
    timeInForce: input.timeInForce ?? old.timeInForce,
    quantity: input.quantity ?? old.quantity,
    limitPrice: input.limitPrice ?? old.limitPrice,
    stopPrice: input.stopPrice ?? old.stopPrice,
  });
}

function sameDecimal(a: Decimal | null, b: Decimal | null): boolean {
  return a === null || b === null ? a === b : a.eq(b);
}

/** Whether a submission reusing a clientOrderId is a retry of the stored order (decimals compared by value). */
export function isSameSubmission(stored: OrderDraft, retry: OrderDraft): boolean {
  return (
    stored.clientOrderId === retry.clientOrderId &&
    stored.strategyId === retry.strategyId &&
    stored.symbol === retry.symbol &&
    stored.side === retry.side &&
    stored.type === retry.type &&
    stored.timeInForce === retry.timeInForce &&
    stored.quantity.eq(retry.quantity) &&
    sameDecimal(stored.limitPrice, retry.limitPrice) &&
    sameDecimal(stored.stopPrice, retry.stopPrice)
  );
}

export function duplicateClientOrderId(clientOrderId: string): PayloadError {
  return payloadError('DUPLICATE_CLIENT_ORDER_ID', idempotencyKeyReused('clientOrderId', clientOrderId, 'an order'), 'clientOrderId');
}

/**
 * What the strategies subgraph said about the order's strategy: null when it does not exist or is
 * another account's (the two look the same). New orders may name only an ACTIVE strategy.
 */
export function checkStrategyStatus(strategyId: string, status: StrategyStatus | null): Result<void> {
  if (status === null) return fail('NOT_FOUND', notFoundInAccount('strategy', strategyId), 'strategyId');
  if (status !== 'ACTIVE') {
    return fail('STRATEGY_NOT_ACTIVE', wrongState('Strategy', strategyId, status, 'new orders may name only an ACTIVE strategy'), 'strategyId');
  }
  return ok(undefined);
}

/** No field: nothing the client sent is wrong. */
export function strategyUnavailable(): PayloadError {
  return payloadError(
    'TEMPORARILY_UNAVAILABLE',
    'The strategy could not be checked because the strategies service did not answer in time; nothing was created, and a retry is safe',
  );
}

/**
 * The order state machine (contract section 3) as one table: for each status, what a cancel, a
 * replace and a fill do. Every decision below reads it, and so do the unit tests; nothing else
 * (no SQL, no other subgraph) keeps a copy of a transition.
 *
 * - cancel: `to` the new status, `unchanged` (answered with the order as it is), or `refused`.
 * - replace: `to` the new status of the old order, or `refused`.
 * - fill: `refused`, or which fills it takes — `any` while open, or only those `executedAtOrBefore`
 *   the instant the cancel or replace took effect (a venue's "too late to cancel": a late fill) —
 *   and the status after a fill that leaves quantity open (`partial`) or completes it (`complete`).
 */
export const ORDER_TRANSITIONS = {
  SUBMITTED: {
    cancel: { to: 'CANCELLED' },
    replace: { to: 'REPLACED' },
    fill: { takes: 'any', partial: 'PARTIALLY_FILLED', complete: 'FILLED' },
  },
  PARTIALLY_FILLED: {
    cancel: { to: 'CANCELLED' },
    replace: { to: 'REPLACED' },
    fill: { takes: 'any', partial: 'PARTIALLY_FILLED', complete: 'FILLED' },
  },
  FILLED: { cancel: 'refused', replace: 'refused', fill: 'refused' },
  // A late fill that completes a cancelled order shows the cancel never took effect: FILLED, cancelledAt cleared.
  CANCELLED: {
    cancel: 'unchanged',
    replace: 'refused',
    fill: { takes: 'executedAtOrBefore', closedAt: 'cancelledAt', partial: 'CANCELLED', complete: 'FILLED' },
  },
  // The replacement carries on the order; the replaced one keeps its late fills and stays REPLACED.
  REPLACED: {
    cancel: 'refused',
    replace: 'refused',
    fill: { takes: 'executedAtOrBefore', closedAt: 'replacedAt', partial: 'REPLACED', complete: 'REPLACED' },
  },
} as const satisfies Record<OrderStatus, OrderTransitions>;

interface OrderTransitions {
  cancel: { to: OrderStatus } | 'unchanged' | 'refused';
  replace: { to: OrderStatus } | 'refused';
  fill:
    | 'refused'
    | { takes: 'any'; partial: OrderStatus; complete: OrderStatus }
    | { takes: 'executedAtOrBefore'; closedAt: 'cancelledAt' | 'replacedAt'; partial: OrderStatus; complete: OrderStatus };
}

/** The statuses a cancel changes: what cancel-all looks for (the open ones). */
export const CANCELLABLE_STATUSES: readonly OrderStatus[] = (Object.keys(ORDER_TRANSITIONS) as OrderStatus[]).filter(
  (status) => typeof ORDER_TRANSITIONS[status].cancel === 'object',
);

/** "only SUBMITTED or PARTIALLY_FILLED orders can …", from the table. */
function onlyStatusesThat(action: 'cancel' | 'replace', verb: string): string {
  const statuses = (Object.keys(ORDER_TRANSITIONS) as OrderStatus[]).filter((status) => typeof ORDER_TRANSITIONS[status][action] === 'object');
  return `only ${statuses.join(' or ')} orders can be ${verb}`;
}

export type CancelDecision = { kind: 'cancel'; to: OrderStatus } | { kind: 'unchanged' } | { kind: 'refused'; error: PayloadError };

/** `id` is the order's, which the refusal names (its `field` is the `id` argument). */
export function decideCancel(status: OrderStatus, id: string): CancelDecision {
  const rule = ORDER_TRANSITIONS[status].cancel;
  if (rule === 'unchanged') return { kind: 'unchanged' };
  if (rule === 'refused') {
    return {
      kind: 'refused',
      error: payloadError('ORDER_NOT_CANCELLABLE', wrongState('Order submission', id, status, onlyStatusesThat('cancel', 'cancelled')), 'id'),
    };
  }
  return { kind: 'cancel', to: rule.to };
}

export type ReplaceDecision = { kind: 'replace'; to: OrderStatus } | { kind: 'refused'; error: PayloadError };

export function decideReplace(status: OrderStatus, id: string): ReplaceDecision {
  const rule = ORDER_TRANSITIONS[status].replace;
  if (rule === 'refused') {
    return {
      kind: 'refused',
      error: payloadError('ORDER_NOT_REPLACEABLE', wrongState('Order submission', id, status, onlyStatusesThat('replace', 'replaced')), 'id'),
    };
  }
  return { kind: 'replace', to: rule.to };
}

/** The part of an order that fills read and change. */
export interface FillState {
  status: OrderStatus;
  quantity: Decimal;
  filledQuantity: Decimal;
  /** Exact sum of quantity × price over the applied fills. */
  fillNotional: Decimal;
  cancelledAt: Date | null;
  replacedAt: Date | null;
}

export interface FillToApply {
  quantity: Decimal;
  price: Decimal;
  /** When the venue executed it; null: now, after any cancel or replace (never a late fill). */
  executedAt: Date | null;
}

export type FillDecision =
  | { outcome: 'APPLIED'; next: FillState }
  | { outcome: 'ALREADY_APPLIED' | 'NOT_FOUND' | 'NOT_FILLABLE' | 'EXCEEDS_REMAINING' };

/** A fill's own values must be positive before it can be weighed against an order; the message says which is not. */
export function checkFill(fill: Pick<FillToApply, 'quantity' | 'price'>): string | undefined {
  if (fill.quantity.lte(0)) return mustBeGreaterThanZero('quantity');
  if (fill.price.lte(0)) return mustBeGreaterThanZero('price');
  return undefined;
}

/**
 * Applies one fill to an order, by the table. The already-applied check comes first so that a retry
 * of a fill is answered ALREADY_APPLIED whatever has happened to the order since (it may be FILLED
 * by now). A fill is never applied beyond the quantity, late or not.
 */
export function decideFill(order: FillState | undefined, alreadyApplied: boolean, fill: FillToApply): FillDecision {
  if (alreadyApplied) return { outcome: 'ALREADY_APPLIED' };
  if (!order) return { outcome: 'NOT_FOUND' };
  const rule = ORDER_TRANSITIONS[order.status].fill;
  if (rule === 'refused') return { outcome: 'NOT_FILLABLE' };
  if (rule.takes === 'executedAtOrBefore') {
    const closedAt = order[rule.closedAt];
    if (closedAt === null || fill.executedAt === null || fill.executedAt.getTime() > closedAt.getTime()) return { outcome: 'NOT_FILLABLE' };
  }
  const filledQuantity = order.filledQuantity.plus(fill.quantity);
  if (filledQuantity.gt(order.quantity)) return { outcome: 'EXCEEDS_REMAINING' };
  const status = filledQuantity.eq(order.quantity) ? rule.complete : rule.partial;
  return {
    outcome: 'APPLIED',
    next: {
      status,
      quantity: order.quantity,
      filledQuantity,
      fillNotional: order.fillNotional.plus(fill.quantity.times(fill.price)),
      // Only a CANCELLED order has a cancelledAt; one a late fill completed was never cancelled.
      cancelledAt: status === 'CANCELLED' ? order.cancelledAt : null,
      replacedAt: order.replacedAt,
    },
  };
}

/** quantity − filledQuantity while the order is open; nothing remains once it is cancelled, replaced or filled. */
export function remainingQuantity(order: Pick<FillState, 'status' | 'quantity' | 'filledQuantity'>): Decimal {
  return isOpen(order.status) ? order.quantity.minus(order.filledQuantity) : new Decimal(0);
}

/** Open: takes any fill (SUBMITTED, PARTIALLY_FILLED). */
function isOpen(status: OrderStatus): boolean {
  const rule = ORDER_TRANSITIONS[status].fill;
  return rule !== 'refused' && rule.takes === 'any';
}
/** Quantity-weighted mean of the fill prices, from the exact notional, rounded only here. */
export function averageFillPrice(order: Pick<FillState, 'filledQuantity' | 'fillNotional'>): Decimal | null {
  if (order.filledQuantity.isZero()) return null;
  return roundDerived(order.fillNotional.dividedBy(order.filledQuantity));
}

/** The filter argument once the scalars and the resolver have parsed it. */
export interface OrderSubmissionFilterInput {
  status?: readonly OrderStatus[] | null;
  symbol?: string | null;
  side?: OrderSide | null;
  strategyId?: ReceivedId | null;
  clientOrderId?: string | null;
  submittedAfter?: Date | null;
  submittedBefore?: Date | null;
  updatedAfter?: Date | null;
}

/** A filter reduced to what the query compares; absent members do not filter. */
export interface OrderFilter {
  statuses?: readonly OrderStatus[];
  symbol?: string;
  side?: OrderSide;
  strategyId?: Uuid;
  clientOrderId?: string;
  submittedAfter?: Date;
  submittedBefore?: Date;
  updatedAfter?: Date;
}

/**
 * Normalises a filter the way submissions are stored (symbol upper-cased). Returns undefined when
 * no order can match: an empty status list, a symbol no order can have, or a strategyId that is not
 * a UUID.
 */
export function normaliseFilter(input: OrderSubmissionFilterInput | null | undefined): OrderFilter | undefined {
  const filter: OrderFilter = {};
  if (!input) return filter;
  if (input.status !== null && input.status !== undefined) {
    if (input.status.length === 0) return undefined;
    filter.statuses = [...new Set(input.status)];
  }
  if (input.symbol !== null && input.symbol !== undefined) {
    const symbol = storedSymbolOf(input.symbol);
    if (symbol === undefined) return undefined;
    filter.symbol = symbol;
  }
  if (input.side) filter.side = input.side;
  if (input.strategyId !== null && input.strategyId !== undefined) {
    if (input.strategyId.uuid === undefined) return undefined;
    filter.strategyId = input.strategyId.uuid;
  }
  if (input.clientOrderId !== null && input.clientOrderId !== undefined) filter.clientOrderId = input.clientOrderId;
  if (input.submittedAfter) filter.submittedAfter = input.submittedAfter;
  if (input.submittedBefore) filter.submittedBefore = strictlyBeforeBound(input.submittedBefore);
  if (input.updatedAfter) filter.updatedAfter = input.updatedAfter;
  return filter;
}

/**
 * Where a page of a list starts: after a keyset position, the time and id of the last row a page
 * held. SUBMITTED_AT_DESC: a submission time. UPDATED_AT_ASC, the incremental sync: a change stamp
 * (`updatedAt`), and each order appears at its last change; or a cursor of the sync as it paged
 * before, by commit order, which the use case turns into a stamp position (`SyncPosition`).
 */
export type ListPosition =
  | { orderBy: 'SUBMITTED_AT_DESC'; after: KeysetPosition | undefined }
  | { orderBy: 'UPDATED_AT_ASC'; after: SyncPosition | undefined };

/**
 * A position of the sync: after the stamp and id of a row handed out, or just after a settled stamp
 * (`syncEndAt`). `formerCommitPosition`: a cursor issued when the sync paged by commit order (a
 * transaction id and a row id; repository.ts `stampBeforeCommitPosition` maps it).
 */
export type SyncPosition = KeysetPosition | { formerCommitPosition: FeedPosition };

/** Greater than every order id (UUIDv7 ids never are all ones). */
export const SYNC_END_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff' as Uuid;

/** The position just after every change stamped at or before `stamp`: a row after it is stamped later. */
export function syncEndAt(stamp: Date): KeysetPosition {
  return keysetPosition(stamp, SYNC_END_ID);
}

/**
 * A sync page never ends inside a millisecond, so that a client that keeps only the last `updatedAt`
 * it saw and asks `updatedAfter` it (strictly after) loses none of that millisecond. From the
 * `size + 1` rows the query fetched in `(updated_at, id)` order: when the row after the page has the
 * stamp of the page's last row, the page's rows with that stamp are left for the next page
 * (`rows`); when every row of the page has that one stamp (more than `size` changes of the account in
 * one millisecond), the page is that whole millisecond instead, more than `size` rows: `restOf` names
 * the last row fetched, after which the rest of its millisecond is to be read.
 */
export function inWholeMilliseconds<Row extends { updated_at: Date }>(fetched: readonly Row[], size: number): { rows: Row[]; restOf?: Row } {
  const page = fetched.slice(0, size);
  const next = fetched[size];
  if (next === undefined) return { rows: page };
  const split = next.updated_at.getTime();
  const kept = page.filter((row) => row.updated_at.getTime() !== split);
  return kept.length === 0 ? { rows: [...fetched], restOf: next } : { rows: kept };
}

/** The columns of a listed order that its cursor holds. */
export interface ListedOrder {
  id: Uuid;
  submitted_at: Date;
  updated_at: Date;
}

/** The tag of the newest-first list's cursors; the former one (the bare ordering) is still accepted. */
export const SUBMITTED_AT_DESC = cursorTag('orders', 'SUBMITTED_AT_DESC', 'SUBMITTED_AT_DESC');

/**
 * The tag of the sync's cursors (stamp positions), new with them; the former one is the list name
 * the commit-order cursors were sealed under, which still open as what they are (`SyncPosition`).
 */
export const UPDATED_AT_ASC = cursorTag('orders', 'UPDATED_AT_ASC:updatedAt', 'orders:UPDATED_AT_ASC');

/** The sync's cursors for one account (sync-cursors.ts). */
export interface AccountSyncCursors {
  encode(position: { at: Date; id: Uuid }): string;
  /** The position a cursor names; undefined when there is none. A cursor this account was not given is a BAD_USER_INPUT. */
  decode(cursor: string | null | undefined): SyncPosition | undefined;
}

/** The two orderings' cursors, sealed to the caller's account (shared/src/sealed-cursors.ts). */
export interface OrderListCursors {
  sync: AccountSyncCursors;
  newestFirst: AccountKeysetCursors;
}

/**
 * A cursor of one ordering is refused by the other. Sync cursors issued in the clear, before they
 * were sealed, held a server-wide transaction id and are refused, not opened: one that a client can
 * write would let it find the transaction id of its own rows and so measure everyone's writes.
 */
export function cursorOf(orderBy: OrderSubmissionOrder, row: ListedOrder, cursors: OrderListCursors): string {
  if (orderBy === 'UPDATED_AT_ASC') return cursors.sync.encode({ at: row.updated_at, id: row.id });
  return cursors.newestFirst.encode({ at: row.submitted_at, id: row.id });
}

/** The position `after` names under `orderBy`; a cursor of another list, ordering or account, or with edited keys, is a BAD_USER_INPUT. */
export function positionAfter(orderBy: OrderSubmissionOrder, after: string | null | undefined, cursors: OrderListCursors): ListPosition {
  if (orderBy === 'UPDATED_AT_ASC') return { orderBy, after: cursors.sync.decode(after) };
  return { orderBy, after: cursors.newestFirst.decode(after) };
}
