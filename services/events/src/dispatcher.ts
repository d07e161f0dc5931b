import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { startLoop, type BackgroundLoop } from '@ots/shared/background';
import type { Logger } from '@ots/shared/logger';
import { StandardWebhook } from '@ots/shared/webhook-signature';
import {
  activeSecrets,
  decideAfterFailure,
  DELIVERY_TIMEOUT_MS,
  disabledAfterFailuresReason,
  RETENTION_MS,
  shouldDisable,
  webhookBody,
} from './domain.ts';
import {
  claimDueMessages,
  deleteEventsBefore,
  insertAttempt,
  lockEndpoint,
  parkPendingMessages,
  settleMessage,
  updateEndpoint,
  type ClaimedMessage,
  type EventsDb,
} from './repository.ts';
import { openSecret } from './secret-box.ts';
import { postWebhook, type WebhookAnswer } from './webhook-sender.ts';

/** Time as the retry schedule sees it; tests advance it instead of waiting hours. */
export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

export interface DispatcherDeps {
  db: EventsDb;
  log: Pick<Logger, 'error' | 'warn' | 'info'>;
  production: boolean;
  clock: Clock;
  /** In [0, 1): the jitter of each retry. */
  random: () => number;
  /** The 10 s of the contract, unless a test shortens it. */
  deliveryTimeoutMs?: number;
  /** Opens the sealed signing secrets (secret-box.ts). */
  secretKey: Buffer;
}

/** Messages claimed per pass and sent concurrently. */
export const DISPATCH_BATCH_SIZE = 20;
/** A claim outlives the 10 s deadline of its attempt with room to record the result. */
export const CLAIM_LEASE_MS = 60_000;

/**
 * One pass: claims the due messages and makes one attempt each, recording it. Returns how many
 * were attempted. The signature's timestamp is the real time of sending, which the receiver checks
 * against its own clock; the schedule follows `clock`.
 */
export async function dispatchDueMessages(deps: DispatcherDeps, stopping?: AbortSignal): Promise<number> {
  const claimed = await claimDueMessages(deps.db, deps.clock.now(), CLAIM_LEASE_MS, DISPATCH_BATCH_SIZE, randomUUID());
  await Promise.all(claimed.map((message) => attempt(deps, message, stopping)));
  return claimed.length;
}

async function attempt(deps: DispatcherDeps, message: ClaimedMessage, stopping: AbortSignal | undefined): Promise<void> {
  const attemptedAt = deps.clock.now();
  const body = webhookBody({ id: message.event_id, type: message.type, occurred_at: message.occurred_at, data: message.data });
  const sentAt = new Date();
  // webhook-id is the event's id on every attempt and redelivery: receivers deduplicate by it.
  const signatures = activeSecrets(message, attemptedAt).map((sealed) =>
    new StandardWebhook(openSecret(deps.secretKey, sealed, message.account_id)).sign(message.event_id, sentAt, body),
  );
  const answer = await postWebhook({
    url: message.url,
    body,
    production: deps.production,
    timeoutMs: deps.deliveryTimeoutMs ?? DELIVERY_TIMEOUT_MS,
    signal: stopping,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'ots-webhooks/1',
      'webhook-id': message.event_id,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      // Standard Webhooks: several signatures, space-separated; a verifier accepts any that matches.
      'webhook-signature': signatures.join(' '),
    },
  });
  await recordAttempt(deps, message, attemptedAt, answer);
}

async function recordAttempt(deps: DispatcherDeps, message: ClaimedMessage, attemptedAt: Date, answer: WebhookAnswer): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    // Its failure streak decides whether to disable it; locked first, so attempts of one endpoint record one after another.
    const endpoint = await lockEndpoint(trx, message.account_id, message.endpoint_id);
    await insertAttempt(trx, message, { attemptedAt, ...answer });
    if (answer.succeeded) {
      await settleMessage(trx, message, { state: 'DELIVERED' });
      if (endpoint?.failing_since) await updateEndpoint(trx, endpoint.account_id, endpoint.id, { failing_since: null }, attemptedAt);
      return;
    }
    if (answer.interrupted) {
      // Our stop, not the receiver's failure: due again at once, for the next replica or start.
      await settleMessage(trx, message, { state: 'PENDING', nextAttemptAt: attemptedAt });
      return;
    }
    const next = decideAfterFailure(message.created_at, message.attempts, attemptedAt, deps.random());
    await settleMessage(trx, message, next.kind === 'retry' ? { state: 'PENDING', nextAttemptAt: next.at } : { state: 'FAILED' });
    if (!endpoint || endpoint.status !== 'ENABLED') return;
    const failingSince = endpoint.failing_since ?? attemptedAt;
    if (shouldDisable(failingSince, attemptedAt)) {
      await updateEndpoint(trx, endpoint.account_id, endpoint.id, { status: 'DISABLED', disabled_reason: disabledAfterFailuresReason(failingSince) }, attemptedAt);
      await parkPendingMessages(trx, endpoint.account_id, endpoint.id);
      deps.log.warn({ endpointId: endpoint.id, accountId: endpoint.account_id }, 'webhook endpoint disabled after 5 days of failures');
    } else if (!endpoint.failing_since) {
      await updateEndpoint(trx, endpoint.account_id, endpoint.id, { failing_since: failingSince }, attemptedAt);
    }
  });
}

/**
 * Starts the dispatcher: a full batch is followed at once by the next; otherwise it waits
 * `intervalMs`, or less when an ingest wakes it. Stopping interrupts the attempts in flight rather
 * than waiting up to 10 s for slow receivers; they are recorded as interrupted and due again at once.
 */
export function startDispatcher(deps: DispatcherDeps, intervalMs: number): BackgroundLoop {
  const stopping = new AbortController();
  // Every attempt of a batch listens to it at once.
  setMaxListeners(DISPATCH_BATCH_SIZE + 1, stopping.signal);
  const loop = startLoop(
    'webhook dispatcher',
    async () => ((await dispatchDueMessages(deps, stopping.signal)) === DISPATCH_BATCH_SIZE ? 0 : intervalMs),
    deps.log,
  );
  return {
    wake: loop.wake,
    stop: async () => {
      stopping.abort();
      await loop.stop();
    },
  };
}

const CLEANUP_INTERVAL_MS = 60 * 60 * 1000;
const CLEANUP_BATCH = 5_000;

/** Deletes events older than 30 days (with their messages and attempts), in batches, hourly. */
export async function deleteExpiredEvents(db: EventsDb, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - RETENTION_MS);
  let total = 0;
  for (;;) {
    const deleted = await deleteEventsBefore(db, cutoff, CLEANUP_BATCH);
    total += deleted;
    if (deleted < CLEANUP_BATCH) return total;
  }
}

export function startRetentionCleanup(deps: Pick<DispatcherDeps, 'db' | 'log' | 'clock'>): BackgroundLoop {
  return startLoop(
    'event retention clean-up',
    async () => {
      const deleted = await deleteExpiredEvents(deps.db, deps.clock.now());
      if (deleted > 0) deps.log.info({ deleted }, 'deleted events older than 30 days');
      return CLEANUP_INTERVAL_MS;
    },
    deps.log,
    { errorDelayMs: CLEANUP_INTERVAL_MS },
  );
}
