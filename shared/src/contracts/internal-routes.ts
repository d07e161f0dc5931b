import { z } from 'zod';
import { fillRecordedData } from './events.ts';
import { wireUuid } from './wire.ts';

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
 * What a relay posts to either route: the wire contract the events service's ingest and fills'
 * recovery route check.
 * @public
 */
export interface IngestBatch {
  events: { id: string; accountId: string; type: string; occurredAt: string; data: Record<string, unknown> }[];
}
