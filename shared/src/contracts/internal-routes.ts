import { z } from 'zod';
import { fillRecordedData } from './events.ts';
import { wireDecimal, wireInstant, wireUuid } from './wire.ts';

/**
 * The routes outbox relays post to (shared/src/outbox.ts sends and signs the batches): not under
 * /graphql, so the gateway never routes to them.
 */

/** The events service's route for every producer's relay. */
export const INGEST_PATH = '/internal/events';

/**
 * The fills subgraph's route for the `fill.recorded` events orders writes: how a fill orders
 * recorded reaches fills when the request that recorded it could not keep it (services/fills/src/recovery.ts).
 */
export const RECORDED_FILLS_PATH = '/internal/recorded-fills';

/** The batch orders' relay posts to RECORDED_FILLS_PATH: an IngestBatch of `fill.recorded` events only, read as fills needs them. */
export const recordedFillsBatch = z.object({
  events: z.array(z.object({ accountId: wireUuid, type: z.literal('fill.recorded'), data: fillRecordedData })),
});

/**
 * Orders' route for the backfill of the applications it recorded before it kept execution ids (its
 * migration 005): the fills subgraph, which kept every fill whole, brings back their execution id,
 * fee, liquidity and execution time (services/fills/src/legacy-fills.ts, services/orders/src/legacy-fills.ts).
 * Signed as the relays' batches are.
 */
export const LEGACY_FILLS_PATH = '/internal/legacy-fills';

/** An application's place in the backfill's walk: the order of orders' key on them. */
const legacyApplication = z.object({ accountId: wireUuid, fillId: z.string() });

/**
 * One step of the backfill: the terms of the fills orders named in its last answer (none at first),
 * and where its walk got to (null at first).
 */
export const legacyFillsStep = z.object({
  fills: z.array(
    z.object({
      accountId: wireUuid,
      id: wireUuid,
      executionId: z.string().min(1),
      fee: wireDecimal,
      liquidity: z.enum(['MAKER', 'TAKER', 'UNKNOWN']),
      executedAt: wireInstant,
    }),
  ),
  after: legacyApplication.nullable(),
});

/** Orders' answer: the next applications after `after` that lack their execution id; none when the walk is done. */
export const legacyFillsAnswer = z.object({ completed: z.number(), lacking: z.array(legacyApplication) });

/**
 * What a relay posts to either route: the wire contract the events service's ingest and fills'
 * recovery route check.
 * @public
 */
export interface IngestBatch {
  events: { id: string; accountId: string; type: string; occurredAt: string; data: Record<string, unknown> }[];
}
