import { Decimal, formatDecimal } from '@ots/shared/decimal';
import { parseUuid, type ReceivedId, type Uuid } from '@ots/shared/ids';
import { fail, ok, payloadError, type PayloadError, type Result } from '@ots/shared/errors';
import { cursorTag } from '@ots/shared/pagination';
import { strictlyBeforeBound } from '@ots/shared/scalars';
import { storedSymbolOf } from '@ots/shared/symbols';
import {
  characterCount,
  idempotencyKeyReused,
  mustBeGreaterThanZero,
  mustBeLengthBetween,
  notFoundInAccount,
  wrongState,
} from '@ots/shared/messages';
import type { Liquidity, OrderStatus } from './generated/enums.ts';
import type { AppliedOrder } from './orders-client.ts';

/** A venue clock may run slightly ahead of ours; beyond this an execution time is a mistake. */
const MAX_EXECUTED_AT_LEAD_MS = 5_000;
const MAX_EXECUTION_ID_LENGTH = 128;

/** The mutation's input as the resolver received it: the order id parsed, and kept as sent for messages. */
export interface RecordFillInput {
  orderSubmissionId: ReceivedId;
  executionId: string;
  quantity: Decimal;
  price: Decimal;
  fee?: Decimal | null;
  liquidity?: Liquidity | null;
  executedAt?: Date | null;
}

/** A validated request, defaults applied except executedAt, whose absence matters to idempotency. */
export interface FillTerms {
  orderSubmissionId: ReceivedId;
  executionId: string;
  quantity: Decimal;
  price: Decimal;
  fee: Decimal;
  liquidity: Liquidity;
  /** Null when the client left it out: the fill then executed when it was received. */
  executedAt: Date | null;
}

export function validateRecordFill(input: RecordFillInput, now: number): Result<FillTerms> {
  const executionIdLength = characterCount(input.executionId);
  if (executionIdLength < 1 || executionIdLength > MAX_EXECUTION_ID_LENGTH) {
    return fail('VALIDATION_FAILED', mustBeLengthBetween('executionId', 1, MAX_EXECUTION_ID_LENGTH, executionIdLength), 'executionId');
  }
  if (!input.quantity.greaterThan(0)) return fail('VALIDATION_FAILED', mustBeGreaterThanZero('quantity'), 'quantity');
  if (!input.price.greaterThan(0)) return fail('VALIDATION_FAILED', mustBeGreaterThanZero('price'), 'price');
  if (input.executedAt && input.executedAt.getTime() > now + MAX_EXECUTED_AT_LEAD_MS) {
    return fail(
      'VALIDATION_FAILED',
      `executedAt ${input.executedAt.toISOString()} is in the future; it may be at most ${MAX_EXECUTED_AT_LEAD_MS / 1000} s ahead of the server clock`,
      'executedAt',
    );
  }
  return ok({
    orderSubmissionId: input.orderSubmissionId,
    executionId: input.executionId,
    quantity: input.quantity,
    price: input.price,
    fee: input.fee ?? new Decimal(0),
    liquidity: input.liquidity ?? 'UNKNOWN',
    executedAt: input.executedAt ?? null,
  });
}

/** The recorded terms of a fill, as stored. */
export interface RecordedTerms {
  orderSubmissionId: string;
  quantity: Decimal | string;
  price: Decimal | string;
  fee: Decimal | string;
  liquidity: Liquidity;
  executedAt: Date;
}

/**
 * Whether a request with an execution id already recorded is a retry of that fill. Amounts compare
 * as numbers ("1.50" retries "1.5"). A retry that leaves out executedAt matches whatever was stored:
 * its default is the receipt time, which no retry can reproduce.
 */
export function isSameFill(recorded: RecordedTerms, requested: FillTerms): boolean {
  return (
    // A stored order id is a UUID; a requested id that is not one retries nothing.
    recorded.orderSubmissionId === requested.orderSubmissionId.uuid &&
    new Decimal(recorded.quantity).equals(requested.quantity) &&
    new Decimal(recorded.price).equals(requested.price) &&
    new Decimal(recorded.fee).equals(requested.fee) &&
    recorded.liquidity === requested.liquidity &&
    (requested.executedAt === null || recorded.executedAt.getTime() === requested.executedAt.getTime())
  );
}

export function duplicateExecutionId(executionId: string): PayloadError {
  return payloadError('DUPLICATE_EXECUTION_ID', idempotencyKeyReused('executionId', executionId, 'a fill'), 'executionId');
}

export function orderNotFound(orderSubmissionId: string): PayloadError {
  return payloadError('NOT_FOUND', notFoundInAccount('order submission', orderSubmissionId), 'orderSubmissionId');
}

/** Only worded here: whether an order can take the fill is decided by orders alone (its `applyFill`). */
function notFillable(orderSubmissionId: string, status: OrderStatus | undefined): PayloadError {
  return payloadError(
    'ORDER_NOT_FILLABLE',
    wrongState(
      'Order submission',
      orderSubmissionId,
      status ?? 'no longer open',
      'a fill must be executed while the order is open, or at or before its cancel or replace took effect',
    ),
    'orderSubmissionId',
  );
}

/**
 * What the order can still take is its quantity less what is filled: `remainingQuantity` is 0 on a
 * cancelled or replaced order, which still takes a late fill within that.
 */
function exceedsRemaining(quantity: Decimal, order: Pick<AppliedOrder, 'quantity' | 'filledQuantity'> | null): PayloadError {
  return payloadError(
    'FILL_EXCEEDS_REMAINING',
    order === null
      ? `quantity ${formatDecimal(quantity)} exceeds what the order has left to fill`
      : `quantity ${formatDecimal(quantity)} exceeds what the order has left to fill, ${formatDecimal(new Decimal(order.quantity).minus(order.filledQuantity))}`,
    'quantity',
  );
}

/** The orders subgraph's verdict on a fill (its `applyFill` mutation). */
export type ApplyOutcome = 'APPLIED' | 'ALREADY_APPLIED' | 'NOT_FOUND' | 'NOT_FILLABLE' | 'EXCEEDS_REMAINING';

export type Settlement = { kind: 'applied' } | { kind: 'refused'; error: PayloadError };

/**
 * What a verdict means for the request: applied (now or before), or the refusal the client sees.
 * Orders records nothing for a refused fill, so its execution id stays free.
 */
export function settlementOf(
  outcome: ApplyOutcome,
  fill: { orderSubmissionId: string; quantity: Decimal | string },
  order: Pick<AppliedOrder, 'status' | 'quantity' | 'filledQuantity'> | null,
): Settlement {
  switch (outcome) {
    case 'APPLIED':
    case 'ALREADY_APPLIED':
      return { kind: 'applied' };
    case 'NOT_FOUND':
      return { kind: 'refused', error: orderNotFound(fill.orderSubmissionId) };
    case 'NOT_FILLABLE':
      return { kind: 'refused', error: notFillable(fill.orderSubmissionId, order?.status) };
    case 'EXCEEDS_REMAINING':
      return { kind: 'refused', error: exceedsRemaining(new Decimal(fill.quantity), order) };
  }
}

/** The filter argument as the schema has it. */
export interface FillFilterInput {
  orderSubmissionId?: string | null;
  strategyId?: string | null;
  symbol?: string | null;
  executedAfter?: Date | null;
  executedBefore?: Date | null;
}

/**
 * The conditions of a listFills page: ids parsed, the symbol spelt as stored. An absent member does
 * not filter; any present one does, the empty symbol included.
 */
export interface FillFilter {
  orderSubmissionId?: Uuid;
  strategyId?: Uuid;
  symbol?: string;
  executedAfter?: Date;
  executedBefore?: Date;
}

/**
 * The filter argument as listFills' query takes it: ids parsed, the symbol upper-cased as symbols
 * are stored. A member that is null or absent does not filter; any other value does, the empty
 * string included (the conditions combine with AND, so one that nothing matches empties the list).
 * Undefined when no fill can match, e.g. an id that is not a UUID.
 */
export function normaliseFilter(input: FillFilterInput | null | undefined): FillFilter | undefined {
  const filter: FillFilter = {};
  if (!input) return filter;
  if (input.orderSubmissionId !== null && input.orderSubmissionId !== undefined) {
    const orderSubmissionId = parseUuid(input.orderSubmissionId);
    if (!orderSubmissionId) return undefined;
    filter.orderSubmissionId = orderSubmissionId;
  }
  if (input.strategyId !== null && input.strategyId !== undefined) {
    const strategyId = parseUuid(input.strategyId);
    if (!strategyId) return undefined;
    filter.strategyId = strategyId;
  }
  if (input.symbol !== null && input.symbol !== undefined) {
    const symbol = storedSymbolOf(input.symbol);
    if (symbol === undefined) return undefined;
    filter.symbol = symbol;
  }
  if (input.executedAfter !== null && input.executedAfter !== undefined) filter.executedAfter = input.executedAfter;
  if (input.executedBefore !== null && input.executedBefore !== undefined) filter.executedBefore = strictlyBeforeBound(input.executedBefore);
  return filter;
}

/** The tag of listFills' cursors; the former one is still accepted. */
export const FILLS_ORDERING = cursorTag('fills', 'EXECUTED_AT_DESC', 'fills.executedAt.desc');
