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
