import { badUserInput } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { decodeCursor, encodeCursor } from '@ots/shared/pagination';
import type { FillFilter, FillKeyset } from './repository.ts';

/** The filter argument as GraphQL hands it over (DateTime already parsed by its scalar). */
export interface FillFilterInput {
  orderSubmissionId?: string | null;
  strategyId?: string | null;
  symbol?: string | null;
  executedAfter?: Date | null;
  executedBefore?: Date | null;
}

/**
 * Normalises a filter the way fills are stored (symbol upper-cased, ids lower-cased). A member that
 * is null or absent does not filter; any other value does, the empty string included (the conditions
 * combine with AND, so one that nothing matches empties the list). Returns undefined when no fill can
 * match, e.g. an id that is not a UUID, so that such a value never reaches Postgres as a malformed uuid.
 */
export function normaliseFillFilter(input: FillFilterInput | null | undefined): FillFilter | undefined {
  const filter: FillFilter = {};
  if (!input) return filter;
  if (input.orderSubmissionId !== null && input.orderSubmissionId !== undefined) {
    if (!isUuid(input.orderSubmissionId)) return undefined;
    filter.orderSubmissionId = input.orderSubmissionId.toLowerCase();
  }
  if (input.strategyId !== null && input.strategyId !== undefined) {
    if (!isUuid(input.strategyId)) return undefined;
    filter.strategyId = input.strategyId.toLowerCase();
  }
  if (input.symbol !== null && input.symbol !== undefined) filter.symbol = input.symbol.toUpperCase();
  if (input.executedAfter !== null && input.executedAfter !== undefined) filter.executedAfter = input.executedAfter;
  if (input.executedBefore !== null && input.executedBefore !== undefined) filter.executedBefore = input.executedBefore;
  return filter;
}

const FILLS_ORDERING = 'fills.executedAt.desc';

/** Execution times are stored to the millisecond, so the ISO form in the cursor round-trips exactly. */
export function cursorOf(fill: { executedAt: Date; id: string }): string {
  return encodeCursor(FILLS_ORDERING, [fill.executedAt.toISOString(), fill.id]);
}

/** The position a cursor names; one whose keys were edited into something no cursor holds is refused. */
export function parseCursor(after: string | null | undefined): FillKeyset | undefined {
  const keys = decodeCursor(after, FILLS_ORDERING, 2);
  if (!keys) return undefined;
  const [iso, id] = keys as [string, string];
  const executedAt = new Date(iso);
  if (Number.isNaN(executedAt.getTime()) || executedAt.toISOString() !== iso || !isUuid(id)) {
    throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
  }
  return { executedAt, id: id.toLowerCase() };
}
