import { randomBytes } from 'node:crypto';
import { fail, ok, type Result } from '@ots/shared/errors';
import { characterCount, mustBeLengthAtMost } from '@ots/shared/messages';
import { EVENT_TYPES, isEventType, type EventType } from '@ots/shared/contracts/events';
import { checkLiteralAddress } from './url-policy.ts';

export const MAX_ENDPOINTS_PER_ACCOUNT = 16;
const MAX_URL_LENGTH = 2048;
const MAX_DESCRIPTION_LENGTH = 500;
/** A rotation's grace: at most a week of two signing secrets. */
const MAX_GRACE_SECONDS = 7 * 24 * 3600;
export const DEFAULT_GRACE_SECONDS = 24 * 3600;

/** Events are kept 30 days (contract section 6); the clean-up job deletes older ones. */
export const RETENTION_MS = 30 * 24 * 3600 * 1000;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Waits after the 1st, 2nd, … failed attempt; after the last, every 10 h (contract section 6). */
export const RETRY_DELAYS_MS: readonly number[] = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR];
/** Retries stop this long after the first attempt was due, and the message is marked failed. */
export const DELIVERY_WINDOW_MS = 3 * DAY;
/** An endpoint whose every attempt failed for this long is disabled. */
const DISABLE_AFTER_FAILING_MS = 5 * DAY;
/** Each wait is stretched or shrunk by up to this fraction, so that endpoints that failed together do not retry together. */
const JITTER = 0.1;
/** A 2xx within this counts as delivered. */
export const DELIVERY_TIMEOUT_MS = 10 * SECOND;

// No control characters: a description is one line shown in lists.
const FORBIDDEN = /[\p{Cc}\p{Cs}]/u;

export function validateDescription(description: string | null | undefined): Result<string | null> {
  if (description === null || description === undefined) return ok(null);
  const length = characterCount(description);
  if (length > MAX_DESCRIPTION_LENGTH) {
    return fail('VALIDATION_FAILED', mustBeLengthAtMost('description', MAX_DESCRIPTION_LENGTH, length), 'description');
  }
  if (FORBIDDEN.test(description)) return fail('VALIDATION_FAILED', 'description must not contain control characters', 'description');
  return ok(description);
}

/** Unknown names are refused rather than ignored: a typo would otherwise subscribe to nothing, silently. */
export function validateEventTypes(types: readonly string[] | null | undefined): Result<EventType[]> {
  if (types === null || types === undefined) return ok([]);
  const unknown = types.filter((type) => !isEventType(type));
  if (unknown.length > 0) {
    return fail(
      'VALIDATION_FAILED',
      `eventTypes holds unknown event types (${unknown.map((type) => JSON.stringify(type)).join(', ')}); known: ${EVENT_TYPES.join(', ')}`,
      'eventTypes',
    );
  }
  return ok([...new Set(types as EventType[])]);
}

/**
 * The rules a URL can be checked against without the network: an absolute http(s) URL, https only
 * in production, no credentials (they would be stored and shown in clear), and in production no
 * literal address outside the public unicast ranges. Names are resolved and checked by
 * url-policy.ts, on save and again at every connection.
 */
export function validateUrlSyntax(raw: string, production: boolean): Result<URL> {
  const bad = (message: string) => fail<URL>('VALIDATION_FAILED', message, 'url');
  if (characterCount(raw) > MAX_URL_LENGTH) return bad(mustBeLengthAtMost('url', MAX_URL_LENGTH, characterCount(raw)));
  if (FORBIDDEN.test(raw)) return bad('url must not contain control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad('url must be an absolute URL such as https://example.com/webhooks');
  }
  if (production ? url.protocol !== 'https:' : url.protocol !== 'https:' && url.protocol !== 'http:') {
    return bad(production ? 'url must use https://' : 'url must use https:// (or http:// outside production)');
  }
  if (url.username || url.password) return bad('url must not contain a user name or password');
  if (url.hash) return bad('url must not contain a fragment (#…)');
  if (production) {
    const literal = checkLiteralAddress(url.hostname);
    if (literal) return bad(`url must not point at ${literal}`);
  }
  return ok(url);
}

export function validateGraceSeconds(graceSeconds: number): Result<number> {
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
    return fail('VALIDATION_FAILED', `graceSeconds must be a whole number from 0 to ${MAX_GRACE_SECONDS} (7 days)`, 'graceSeconds');
  }
  return ok(graceSeconds);
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export interface EndpointSecrets {
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/** Every secret that signs at `now`: the current one, and the previous one during a rotation's grace. */
export function activeSecrets(endpoint: EndpointSecrets, now: Date): string[] {
  const previousValid = endpoint.previous_secret !== null && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now;
  return previousValid ? [endpoint.secret, endpoint.previous_secret!] : [endpoint.secret];
}

export type AfterFailure = { kind: 'retry'; at: Date } | { kind: 'failed' };

/**
 * After the `attempts`-th failed attempt of a message first due at `firstDueAt`: the next attempt's
 * time, with jitter, or failed once that would fall beyond the 3-day window. The wait counts from
 * the attempt's end: counted from its start, the "5 s" after a 10 s time-out would already be over,
 * and the retry would follow at once. `random` is in [0, 1), as Math.random.
 */
export function decideAfterFailure(
  firstDueAt: Date,
  attempts: number,
  attempt: { attemptedAt: Date; durationMs: number },
  random: number,
): AfterFailure {
  const base = RETRY_DELAYS_MS[Math.min(attempts, RETRY_DELAYS_MS.length) - 1]!;
  const delay = Math.round(base * (1 - JITTER + 2 * JITTER * random));
  const at = new Date(attempt.attemptedAt.getTime() + attempt.durationMs + delay);
  if (at.getTime() > firstDueAt.getTime() + DELIVERY_WINDOW_MS) return { kind: 'failed' };
  return { kind: 'retry', at };
}

/**
 * The longest time from one attempt's start to the next while a message is retried: the longest
 * wait, stretched by its jitter, counted from the end of an attempt that ran to the time-out.
 */
const LONGEST_RETRY_GAP_MS = Math.max(...RETRY_DELAYS_MS) * (1 + JITTER) + DELIVERY_TIMEOUT_MS;
/**
 * A spell without attempts that ends a run of failures: the longest retry gap, and an hour for the
 * dispatcher's own delays on top (its poll, a wait behind the endpoint's attempt in flight, a dead
 * claimer's lease, a restart), so that a run is never cut by them and an endpoint failing for good
 * is disabled on time.
 */
const RUN_ENDING_SPELL_MS = LONGEST_RETRY_GAP_MS + 3_600_000;

/**
 * When the run of failures that a failed attempt at `failedAt` belongs to began. Failing "5 days in a
 * row" means failing while deliveries are tried: a spell with no attempt at all, longer than any wait
 * between retries (its messages all settled, no new events), ends the run, so the first failure after
 * it starts a new one instead of continuing a run that ended days before (and disabling at once).
 */
export function failureStreakStart(endpoint: { failingSince: Date | null; lastFailedAt: Date | null }, failedAt: Date): Date {
  const { failingSince, lastFailedAt } = endpoint;
  if (failingSince === null || lastFailedAt === null) return failedAt;
  return failedAt.getTime() - lastFailedAt.getTime() > RUN_ENDING_SPELL_MS ? failedAt : failingSince;
}

/** An endpoint failing since `failingSince` is disabled once the run of failures reaches 5 days. */
export function shouldDisable(failingSince: Date, now: Date): boolean {
  return now.getTime() - failingSince.getTime() >= DISABLE_AFTER_FAILING_MS;
}

export function disabledAfterFailuresReason(failingSince: Date): string {
  return `Disabled automatically: every delivery attempt failed from ${failingSince.toISOString()} for 5 days. Fix the receiver, then enable the endpoint again.`;
}

/** The body of every webhook: the event as listEvents shows it. */
export function webhookBody(event: { id: string; type: string; occurred_at: Date; data: unknown }): string {
  return JSON.stringify({ id: event.id, type: event.type, occurredAt: event.occurred_at.toISOString(), data: event.data });
}

