import { badUserInput } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { decodeFeedCursor, encodeFeedCursor, positionOf, type FeedPosition } from '@ots/shared/commit-order';
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

/** Under SUBMITTED_AT_DESC, a page starts after this submission time and id. */
export interface SubmittedPosition {
  at: Date;
  id: string;
}

/** Where a page starts: a submission position, or under UPDATED_AT_ASC a position in commit order. */
export type CursorPosition = SubmittedPosition | FeedPosition;

export interface PositionedRow {
  id: string;
  submitted_at: Date;
  commit_xid: string;
}

/**
 * UPDATED_AT_ASC pages in the order changes committed (shared/src/commit-order.ts): each order
 * appears at its last change, and nothing committed later can appear behind a cursor. That order
 * follows `updatedAt` closely but not exactly (a change stamped earlier may commit later), which is
 * why the cursor holds a commit position and not a time.
 */
export function cursorOf(orderBy: OrderSubmissionOrder, row: PositionedRow): string {
  if (orderBy === 'UPDATED_AT_ASC') return encodeFeedCursor(orderBy, positionOf(row as unknown as Record<string, unknown>));
  // Timestamps are stored to the millisecond, so the ISO form in the cursor round-trips exactly.
  return encodeCursor(orderBy, [row.submitted_at.toISOString(), row.id]);
}

export function parseCursor(after: string | null | undefined, orderBy: OrderSubmissionOrder): CursorPosition | undefined {
  if (orderBy === 'UPDATED_AT_ASC') {
    const position = decodeFeedCursor(orderBy, after, isUuid);
    return position && { xid: position.xid, id: position.id.toLowerCase() };
  }
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
