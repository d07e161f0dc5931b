import { z } from 'zod';
import { DecimalFormatError, parseDecimal } from './decimal.ts';
import { parseUuid } from './ids.ts';
import { parseDateTime } from './scalars.ts';
import type { SubgraphRouteContract } from './subgraph-client.ts';

/**
 * How the fills subgraph has orders apply a fill: one POST of JSON to orders, on the caller's behalf
 * (the gateway assertion travels with it), answered with the verdict and the order after it.
 *
 * A route of its own rather than a GraphQL mutation: it is every recordFill's one call between
 * subgraphs, and on the 2-core reference machine Apollo Server's request pipeline around it cost
 * about 200 µs of CPU more per call than this route (800 µs against 600 µs, calls made one at a
 * time), which was 10–15% of recordFill's latency under load. Nothing else about the call needs
 * GraphQL: it has one caller, one fixed selection, and no client ever sees it.
 */

/** Ids as Postgres writes them: a lower-case UUID. */
const storedId = z.string().refine((value) => parseUuid(value) === value, 'must be a lower-case UUID');

/** A wire decimal (shared/src/decimal.ts), parsed to an exact Decimal. */
const wireDecimal = z.string().transform((value, context) => {
  try {
    return parseDecimal(value);
  } catch (error) {
    if (!(error instanceof DecimalFormatError)) throw error;
    context.addIssue({ code: 'custom', message: error.message });
    return z.NEVER;
  }
});

const positiveDecimal = wireDecimal.refine((value) => value.gt(0), 'must be greater than 0');

const wireDateTime = z.string().transform((value, context) => {
  try {
    return parseDateTime(value);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const fillToApply = z.object({
  /** The fills subgraph's id of the fill: a fill is applied once, however often it is sent. */
  fillId: storedId,
  orderSubmissionId: storedId,
  quantity: positiveDecimal,
  price: positiveDecimal,
  /** When the venue executed the fill: decides whether a fill reported after a cancel or replace is a late fill. */
  executedAt: wireDateTime,
});

export const APPLY_FILL_OUTCOMES = [
  /** The fill was applied now. */
  'APPLIED',
  /** The fill had been applied before; nothing changed. */
  'ALREADY_APPLIED',
  /** No such order in the caller's account. */
  'NOT_FOUND',
  /** The order is FILLED, or CANCELLED or REPLACED before the fill was executed. */
  'NOT_FILLABLE',
  /** The fill's quantity is more than the order's remaining quantity. */
  'EXCEEDS_REMAINING',
] as const;

const reference = z.object({ id: z.string() }).nullable();

/**
 * The order as orders' schema shows it, scalars in their wire form (decimals and instants as strings):
 * every field the fills subgraph `@provides` on `RecordFillPayload.orderSubmission`, plus the strategy
 * the fill copies and the replace chain its event reports.
 */
const orderAfterFill = z.object({
  id: z.string(),
  clientOrderId: z.string().nullable(),
  symbol: z.string(),
  side: z.enum(['BUY', 'SELL']),
  type: z.enum(['MARKET', 'LIMIT', 'STOP', 'STOP_LIMIT']),
  timeInForce: z.enum(['DAY', 'GTC', 'IOC', 'FOK']),
  quantity: z.string(),
  limitPrice: z.string().nullable(),
  stopPrice: z.string().nullable(),
  status: z.enum(['SUBMITTED', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED', 'REPLACED']),
  filledQuantity: z.string(),
  remainingQuantity: z.string(),
  averageFillPrice: z.string().nullable(),
  submittedAt: z.string(),
  updatedAt: z.string(),
  cancelledAt: z.string().nullable(),
  replacedAt: z.string().nullable(),
  strategy: reference,
  replacesOrderSubmission: reference,
  replacedBy: reference,
});

const fillVerdict = z.object({
  outcome: z.enum(APPLY_FILL_OUTCOMES),
  /** The order after the call; null for NOT_FOUND. */
  orderSubmission: orderAfterFill.nullable(),
});

export const applyFillRoute = {
  path: '/internal/apply-fill',
  input: fillToApply,
  answer: fillVerdict,
} satisfies SubgraphRouteContract;

/** The fill as fills sends it (wire form). */
export type FillToApplyWire = z.input<typeof fillToApply>;
/** The fill as orders receives it, checked and parsed. */
export type FillToApply = z.output<typeof fillToApply>;
export type ApplyFillOutcome = (typeof APPLY_FILL_OUTCOMES)[number];
export type OrderAfterFill = z.infer<typeof orderAfterFill>;
export type FillVerdict = z.infer<typeof fillVerdict>;
