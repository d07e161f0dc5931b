import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { startLoop, type BackgroundLoop } from '@ots/shared/background';
import type { Uuid } from '@ots/shared/ids';
import type { Logger } from '@ots/shared/logger';
import { StandardWebhook } from '@ots/shared/webhook-signature';
import {
  activeSecrets,
  decideAfterFailure,
  DELIVERY_TIMEOUT_MS,
  disabledAfterFailuresReason,
  failureStreakStart,
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
  recordDelivered,
  settleMessage,
  updateEndpoint,
  type ClaimedMessage,
  type EventsDb,
} from './repository.ts';
import { openSecret } from '@ots/shared/secret-box';
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
  /** Opens the sealed signing secrets (shared/src/secret-box.ts). */
  secretKey: Buffer;
}

/**
 * Attempts in flight at once to one endpoint, per process: a receiver that never answers holds at
 * most these, each for the 10 s, while every other endpoint's deliveries go on beside them.
 */
export const ENDPOINT_CONCURRENCY = 16;
/**
 * Attempts in flight at once to an endpoint whose every attempt fails: sending it a second one
 * while the first hangs helps nobody, and one each keeps failing receivers out of SHARED_IN_FLIGHT.
 */
const FAILING_ENDPOINT_CONCURRENCY = 1;
/**
 * Attempts in flight in one process beyond each endpoint's first, shared by all endpoints (for
 * sockets and memory): twenty endpoints' bursts at full concurrency. An endpoint with nothing in
 * flight always gets its first attempt outside this room (claimDueMessages), so however many
 * receivers hang, every other endpoint's deliveries go on beside them, one at a time at worst.
 */
const SHARED_IN_FLIGHT = 20 * ENDPOINT_CONCURRENCY;
/** A claim outlives the 10 s deadline of its attempt with room to record the result. */
export const CLAIM_LEASE_MS = 60_000;

/** The attempts one process has in flight, per endpoint. */
class InFlight {
  readonly perEndpoint = new Map<Uuid, number>();
  readonly attempts = new Set<Promise<void>>();

  /** The attempts beyond each endpoint's first: what SHARED_IN_FLIGHT bounds. */
  get shared(): number {
    return this.attempts.size - this.perEndpoint.size;
  }

  add(message: ClaimedMessage, attempt: Promise<void>): Promise<void> {
    this.perEndpoint.set(message.endpoint_id, (this.perEndpoint.get(message.endpoint_id) ?? 0) + 1);
    const tracked = attempt.finally(() => {
      const left = this.perEndpoint.get(message.endpoint_id)! - 1;
      if (left === 0) this.perEndpoint.delete(message.endpoint_id);
      else this.perEndpoint.set(message.endpoint_id, left);
      this.attempts.delete(tracked);
    });
    this.attempts.add(tracked);
    return tracked;
  }
}

/**
 * Claims the due messages that fit beside `inFlight` (the first of each idle endpoint, and at most
 * the shared room left for the rest) and starts one attempt each, without waiting for them: returns
 * the attempts started, each recording its result.
 */
async function startDueAttempts(deps: DispatcherDeps, inFlight: InFlight, stopping: AbortSignal | undefined): Promise<Promise<void>[]> {
  const limits = {
    limit: SHARED_IN_FLIGHT - inFlight.shared,
    perEndpoint: ENDPOINT_CONCURRENCY,
    perFailingEndpoint: FAILING_ENDPOINT_CONCURRENCY,
    inFlight: inFlight.perEndpoint,
  };
  const claimed = await claimDueMessages(deps.db, deps.clock.now(), CLAIM_LEASE_MS, limits, randomUUID());
  return claimed.map((message) => inFlight.add(message, attempt(deps, message, stopping)));
}

/**
 * One pass, waiting for its attempts: claims the due messages and makes one attempt each, recording
 * it. Returns how many were attempted. The signature's timestamp is the real time of sending, which
 * the receiver checks against its own clock; the schedule follows `clock`.
 */
export async function dispatchDueMessages(deps: DispatcherDeps, stopping?: AbortSignal): Promise<number> {
  const started = await startDueAttempts(deps, new InFlight(), stopping);
  await Promise.all(started);
  return started.length;
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
  const recorded = answer.succeeded ? await recordDelivered(deps.db, message, { attemptedAt, ...answer }) : await recordFailure(deps, message, attemptedAt, answer);
  if (!recorded) {
    // Removed, or its event expired, during the attempt: nothing is left to record it on, nor to send again.
    deps.log.info({ endpointId: message.endpoint_id, messageId: message.id }, 'webhook attempt not recorded: its endpoint or event was deleted while it ran');
  }
}

/** False when the endpoint or the message was gone: nothing recorded. */
async function recordFailure(deps: DispatcherDeps, message: ClaimedMessage, attemptedAt: Date, answer: WebhookAnswer): Promise<boolean> {
  return deps.db.transaction().execute(async (trx) => {
    // Its failure streak decides whether to disable it; locked first, so attempts of one endpoint record one after another.
    const endpoint = await lockEndpoint(trx, message.account_id, message.endpoint_id);
    if (!endpoint || !(await insertAttempt(trx, message, { attemptedAt, ...answer }))) return false;
    if (answer.interrupted) {
      // Our stop, not the receiver's failure: due again at once, for the next replica or start.
      await settleMessage(trx, message, { state: 'PENDING', nextAttemptAt: attemptedAt, interrupted: true });
    } else {
      const next = decideAfterFailure(message.created_at, message.attempts, { attemptedAt, durationMs: answer.durationMs }, deps.random());
      await settleMessage(trx, message, next.kind === 'retry' ? { state: 'PENDING', nextAttemptAt: next.at } : { state: 'FAILED' });
    }
    if (endpoint.status !== 'ENABLED') {
      // Disabled while the attempt was in flight: its disabling left this claimed message alone, so it waits parked with the rest.
      await parkPendingMessages(trx, endpoint.account_id, endpoint.id);
      return true;
    }
    if (answer.interrupted) return true;
    const failingSince = failureStreakStart({ failingSince: endpoint.failing_since, lastFailedAt: endpoint.last_failed_at }, attemptedAt);
    // Attempts in flight side by side may be recorded out of order: the latest failure stays.
    const streak = { failing_since: failingSince, last_failed_at: endpoint.last_failed_at && endpoint.last_failed_at > attemptedAt ? endpoint.last_failed_at : attemptedAt };
    if (shouldDisable(failingSince, attemptedAt)) {
      await updateEndpoint(trx, endpoint.account_id, endpoint.id, { ...streak, status: 'DISABLED', disabled_reason: disabledAfterFailuresReason(failingSince) }, attemptedAt);
      await parkPendingMessages(trx, endpoint.account_id, endpoint.id);
      deps.log.warn({ endpointId: endpoint.id, accountId: endpoint.account_id }, 'webhook endpoint disabled after 5 days of failures');
    } else {
      await updateEndpoint(trx, endpoint.account_id, endpoint.id, streak, attemptedAt);
    }
    return true;
  });
}

/**
 * Starts the dispatcher: each step claims what fits beside the attempts in flight and starts them
 * without waiting, so that a slow receiver holds up only its own endpoint's attempts; each attempt
 * that ends wakes the loop to claim more. A step that filled the shared room is followed at once by
 * the next; otherwise it waits `intervalMs`, or less when an ingest or an ending attempt wakes it.
 * Stopping interrupts the attempts in flight rather than waiting up to 10 s for slow receivers;
 * they are recorded as interrupted and due again at once.
 */
export function startDispatcher(deps: DispatcherDeps, intervalMs: number): BackgroundLoop {
  const stopping = new AbortController();
  // Every attempt in flight listens to it at once, and there is one for each endpoint with due messages: no limit.
  setMaxListeners(0, stopping.signal);
  const inFlight = new InFlight();
  const loop = startLoop(
    'webhook dispatcher',
    async () => {
      // Claims even when the shared room is full: an idle endpoint's first attempt never waits for it.
      const started = await startDueAttempts(deps, inFlight, stopping.signal);
      for (const attempt of started) {
        attempt.then(
          () => loop.wake(),
          (error: unknown) => {
            // Its claim runs out with the lease and the message is sent again: at least once.
            deps.log.error({ err: error }, 'webhook attempt failed to record; it is due again when its claim ends');
            loop.wake();
          },
        );
      }
      return started.length > 0 && inFlight.shared === SHARED_IN_FLIGHT ? 0 : intervalMs;
    },
    deps.log,
  );
  return {
    wake: loop.wake,
    stop: async () => {
      stopping.abort();
      await loop.stop();
      await Promise.allSettled(inFlight.attempts);
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
