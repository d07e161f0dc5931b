import { badUserInput } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { decodeCursor, encodeCursor } from '@ots/shared/pagination';
import type { OrderSide, OrderStatus } from './domain.ts';

export type OrderSubmissionOrder = 'SUBMITTED_AT_DESC' | 'UPDATED_AT_ASC';

/** The filter argument as GraphQL hands it over (DateTime already parsed by its scalar). */
export interface OrderSubmissionFilterInput {
  status?: readonly OrderStatus[] | null;
  symbol?: string | null;
  side?: OrderSide | null;
  strategyId?: string | null;
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
  strategyId?: string;
  clientOrderId?: string;
  submittedAfter?: Date;
  submittedBefore?: Date;
  updatedAfter?: Date;
}

/**
 * Normalises a filter the way submissions are stored (symbol upper-cased, ids lower-cased). Returns
 * undefined when no order can match, e.g. an empty status list or a strategyId that is not a UUID,
 * so that such a value never reaches Postgres as a malformed uuid.
 */
export function normaliseFilter(input: OrderSubmissionFilterInput | null | undefined): OrderFilter | undefined {
  const filter: OrderFilter = {};
  if (!input) return filter;
  if (input.status !== null && input.status !== undefined) {
    if (input.status.length === 0) return undefined;
    filter.statuses = [...new Set(input.status)];
  }
  if (input.symbol !== null && input.symbol !== undefined) filter.symbol = input.symbol.toUpperCase();
  if (input.side) filter.side = input.side;
  if (input.strategyId !== null && input.strategyId !== undefined) {
    if (!isUuid(input.strategyId)) return undefined;
    filter.strategyId = input.strategyId.toLowerCase();
  }
  if (input.clientOrderId !== null && input.clientOrderId !== undefined) filter.clientOrderId = input.clientOrderId;
  if (input.submittedAfter) filter.submittedAfter = input.submittedAfter;
  if (input.submittedBefore) filter.submittedBefore = input.submittedBefore;
  if (input.updatedAfter) filter.updatedAfter = input.updatedAfter;
  return filter;
}

/** The position after which a page starts: the sort timestamp and id of the last row already seen. */
export interface CursorPosition {
  at: Date;
  id: string;
}

export interface PositionedRow {
  id: string;
  submitted_at: Date;
  updated_at: Date;
}

/** The timestamp each ordering sorts by (then by id, in the same direction). */
export function sortTimeOf(orderBy: OrderSubmissionOrder, row: PositionedRow): Date {
  return orderBy === 'UPDATED_AT_ASC' ? row.updated_at : row.submitted_at;
}

/** Timestamps are stored to the millisecond, so the ISO form in the cursor round-trips exactly. */
export function cursorOf(orderBy: OrderSubmissionOrder, row: PositionedRow): string {
  return encodeCursor(orderBy, [sortTimeOf(orderBy, row).toISOString(), row.id]);
}

export function parseCursor(after: string | null | undefined, orderBy: OrderSubmissionOrder): CursorPosition | undefined {
  const keys = decodeCursor(after, orderBy, 2);
  if (!keys) return undefined;
  const [iso, id] = keys as [string, string];
  const at = new Date(iso);
  // A cursor is opaque but can be edited; one that does not hold a valid position is refused.
  if (Number.isNaN(at.getTime()) || at.toISOString() !== iso || !isUuid(id)) {
    throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
  }
  return { at, id: id.toLowerCase() };
}
