import { z } from 'zod';
import { wireDecimal, wireInstant, wireUuid } from './wire.ts';

/**
 * The events the services write (contract section 6): their types, which webhook endpoints
 * subscribe to and the events service checks every relayed event against.
 */
export const EVENT_TYPES = [
  'order_submission.submitted',
  'order_submission.partially_filled',
  'order_submission.filled',
  'order_submission.cancelled',
  'order_submission.replaced',
  'fill.recorded',
  'strategy.created',
  'strategy.updated',
  'strategy.paused',
  'strategy.resumed',
  'strategy.archived',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/**
 * The fill itself in a `fill.recorded` event's data: the fill as the API shows it but for its times,
 * which orders builds (services/orders/src/mappers.ts, `fillData`); the statement that records the
 * fill completes it (`fillRecordedData`).
 */
const recordedFill = z.object({
  id: wireUuid,
  orderSubmissionId: wireUuid,
  executionId: z.string().min(1),
  symbol: z.string(),
  // The SDL's OrderSide and Liquidity: a value added to either fails to compile in orders' fillData
  // until it is added here, and one added here fails in fills' recovery until fills' schema has it.
  side: z.enum(['BUY', 'SELL']),
  quantity: wireDecimal,
  price: wireDecimal,
  fee: wireDecimal,
  liquidity: z.enum(['MAKER', 'TAKER', 'UNKNOWN']),
});

/** The fill's fields of a `fill.recorded` event as its producer writes them. */
export type RecordedFillFields = z.input<typeof recordedFill>;

/**
 * A `fill.recorded` event's data (contract section 6), the one contract of what orders writes and
 * fills' recovery route (services/fills/src/recovery.ts) keeps a fill from: the fill with its times
 * (`executedAt`, `recordedAt`), and under `orderSubmission` the order's own event data, of which
 * fills reads the strategy.
 */
export const fillRecordedData = recordedFill.extend({
  executedAt: wireInstant,
  recordedAt: wireInstant,
  orderSubmission: z.object({ strategyId: wireUuid.nullable() }),
});

/** A `fill.recorded` event's data as its consumer reads it. */
export type FillRecordedData = z.output<typeof fillRecordedData>;
