import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { fail, ok, type Result } from '@ots/shared/errors';
import { parseUuid, type Uuid } from '@ots/shared/ids';
import { EVENT_TYPES } from '@ots/shared/contracts/events';
import { INGEST_PATH } from '@ots/shared/contracts/internal-routes';
import { registerRelayRoute } from '@ots/shared/outbox';
import { ingestEvents, type EventsDb, type IncomingEvent } from './repository.ts';

/** At most this many events per ingest request; relays send 100. */
const MAX_INGEST_BATCH = 1000;

/** Batches of 100 events with their objects fit with room to spare. */
const INGEST_BODY_LIMIT = 5 * 1024 * 1024;

export interface IngestDeps {
  db: EventsDb;
  secret: string;
  now(): Date;
  /** Called after events were stored with messages to deliver, so the dispatcher sends them without waiting for its next pass. */
  onQueued(): void;
}

/**
 * The route producers' outbox relays post to (shared/src/outbox.ts explains the authentication).
 */
export async function registerIngestRoute(app: FastifyInstance, deps: IngestDeps): Promise<void> {
  await registerRelayRoute(app, {
    path: INGEST_PATH,
    secret: deps.secret,
    bodyLimit: INGEST_BODY_LIMIT,
    refusal: 'Invalid ingest signature',
    handle: async (parsedBody, body, reply) => {
      const batch = parseIngestBatch(parsedBody);
      if (!batch.ok) return reply.code(400).send({ detail: batch.error.message });
      // Checked, the batch is stored from the text that was signed and parsed.
      const { accepted, queued } = await ingestEvents(deps.db, body, deps.now());
      if (queued > 0) deps.onQueued();
      return reply.send({ accepted });
    },
  });
}

/** A relay writes ids as Postgres hands them over, so anything but a lower-case UUID is a broken relay. */
const relayedUuid = z.string().refine((value) => parseUuid(value) === value).transform((value) => value as Uuid);

/** The relay's batch (`IngestBatch`, shared/src/contracts/internal-routes.ts). */
const ingestBatch = z.object({
  events: z
    .array(
      z.object({
        id: relayedUuid,
        accountId: relayedUuid,
        type: z.enum(EVENT_TYPES),
        occurredAt: z.iso.datetime({ offset: true }).transform((value) => new Date(value)),
        data: z.record(z.string(), z.unknown()),
      }),
    )
    .max(MAX_INGEST_BATCH),
});

/** The relay's batch, checked: a refusal names the event at fault. */
export function parseIngestBatch(body: unknown): Result<IncomingEvent[]> {
  const parsed = ingestBatch.safeParse(body);
  if (parsed.success) return ok(parsed.data.events);
  const [, index] = parsed.error.issues[0]?.path ?? [];
  const message =
    typeof index === 'number'
      ? `events[${index}] needs a lower-case UUID id and accountId, a known type, an ISO occurredAt and an object data`
      : `events must be an array of at most ${MAX_INGEST_BATCH}`;
  return fail('VALIDATION_FAILED', message, 'events');
}
