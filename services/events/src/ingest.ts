import type { FastifyInstance } from 'fastify';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { INGEST_PATH } from '@ots/shared/outbox';
import { parseIngestBatch } from './domain.ts';
import { ingestEvents, type EventsDb } from './repository.ts';

/** Batches of 100 events with their objects fit with room to spare. */
const INGEST_BODY_LIMIT = 5 * 1024 * 1024;

export interface IngestDeps {
  db: EventsDb;
  secret: string;
  now(): Date;
  /** Called after a commit that stored new events, so the dispatcher sends them without waiting for its next pass. */
  onIngested(): void;
}

/**
 * The route producers' outbox relays post to (shared/src/outbox.ts explains the authentication).
 * Registered in its own scope so that its raw-body parser (the signature covers the exact bytes)
 * leaves /graphql alone.
 */
export async function registerIngestRoute(app: FastifyInstance, deps: IngestDeps): Promise<void> {
  const webhook = new Webhook(deps.secret);
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: INGEST_BODY_LIMIT }, (_request, body, done) => done(null, body));
    scope.post(INGEST_PATH, async (request, reply) => {
      const body = typeof request.body === 'string' ? request.body : '';
      const header = (name: string) => String(request.headers[name] ?? '');
      let parsedBody: unknown;
      try {
        parsedBody = webhook.verify(body, {
          'webhook-id': header('webhook-id'),
          'webhook-timestamp': header('webhook-timestamp'),
          'webhook-signature': header('webhook-signature'),
        });
      } catch (error) {
        if (error instanceof WebhookVerificationError) return reply.code(401).send({ detail: 'Invalid ingest signature' });
        return reply.code(400).send({ detail: 'The body is not JSON' });
      }
      const batch = parseIngestBatch(parsedBody);
      if (!batch.ok) return reply.code(400).send({ detail: batch.error.message });
      const accepted = await deps.db.transaction().execute((trx) => ingestEvents(trx, batch.value, deps.now()));
      if (accepted > 0) deps.onIngested();
      return reply.send({ accepted });
    });
  });
}
