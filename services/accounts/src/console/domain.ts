import { createHash, randomBytes } from 'node:crypto';
import { DEFAULT_ROLL_GRACE_MS, MAX_KEY_LABEL_LENGTH } from '../domain.ts';

/**
 * The console's rules as plain functions: passwords, emails, sessions, sign-in limits, the origin
 * check, and how a key's status, expiry and roll grace read on the page. No I/O here; every function
 * that depends on time takes `now` (milliseconds), so the tests drive the clock.
 */

const MIN_PASSWORD_LENGTH = 12;
/** Long enough for any passphrase or manager-made password; a bound keeps a request from making the hash chew megabytes. */
const MAX_PASSWORD_LENGTH = 256;

/** The contract's rule (at least 12 characters), counted in characters as a person counts them, not UTF-16 units. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `Use at least ${MIN_PASSWORD_LENGTH} characters`;
  if (length > MAX_PASSWORD_LENGTH) return `Use at most ${MAX_PASSWORD_LENGTH} characters`;
  return undefined;
}

const EMAIL = /^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/;
// Control characters are invisible in every list that shows a label; a lone surrogate would be stored as U+FFFD.
const CONTROL_CHARACTERS_OR_LONE_SURROGATES = /[\p{Cc}\p{Cs}]/u;
const MAX_EMAIL_LENGTH = 254;

/** Emails are compared lower-cased and trimmed: one address is one owner, however it is typed. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function isValidEmail(email: string): boolean {
  return email.length <= MAX_EMAIL_LENGTH && EMAIL.test(email) && !CONTROL_CHARACTERS_OR_LONE_SURROGATES.test(email);
}

/** A 256-bit random secret (session id, set-password token) in URL-safe text. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The stored form of a session id or a set-password token. They are 256-bit random values, so a
 * fast hash is enough (nothing to brute-force) and a database dump yields nothing usable.
 */
export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export const SET_PASSWORD_LINK_TTL_MS = 24 * 3_600_000;

/** `{CONSOLE_BASE_URL}/set-password#token=…`: a fragment, so the token never reaches a server log or a Referer. */
export function setPasswordUrl(consoleBaseUrl: string, token: string): string {
  return `${consoleBaseUrl.replace(/\/+$/, '')}/set-password#token=${token}`;
}

export const SESSION_IDLE_MS = 30 * 60_000;
export const SESSION_ABSOLUTE_MS = 12 * 3_600_000;

/** A session lives while it was used in the last 30 minutes and began less than 12 hours ago. */
export function isSessionLive(session: { createdAt: number; lastSeenAt: number }, now: number): boolean {
  return now - session.lastSeenAt < SESSION_IDLE_MS && now - session.createdAt < SESSION_ABSOLUTE_MS;
}

export const SIGN_IN_WINDOW_MS = 15 * 60_000;
const SIGN_IN_FAILURES_PER_EMAIL = 10;
const SIGN_IN_FAILURES_PER_ADDRESS = 30;

export type SignInAllowance = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Contract section 8: 10 failures per email per 15 minutes, 30 per address (an IPv6 client's /64,
 * `failedAuthClientOf`). Given the failure times within the window (oldest first), a further attempt
 * waits until enough of them have left it.
 */
export function signInAllowance(failures: { email: readonly number[]; address: readonly number[] }, now: number): SignInAllowance {
  const waitFor = (times: readonly number[], limit: number) => {
    const recent = times.filter((time) => now - time < SIGN_IN_WINDOW_MS);
    if (recent.length < limit) return 0;
    // The attempt is allowed again once the (count - limit + 1)-th oldest failure leaves the window.
    const freeing = recent[recent.length - limit]!;
    return freeing + SIGN_IN_WINDOW_MS - now;
  };
  const waitMs = Math.max(waitFor(failures.email, SIGN_IN_FAILURES_PER_EMAIL), waitFor(failures.address, SIGN_IN_FAILURES_PER_ADDRESS));
  return waitMs > 0 ? { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) } : { allowed: true };
}

/**
 * Cross-site request forgery: a state-changing request must come from the console's own origin.
 * Browsers always send `Origin` on a POST (and `Sec-Fetch-Site`), and a page elsewhere cannot set
 * either; a request that carries neither is not from a browser page at all, and is refused too,
 * since the console's front end always sends them.
 */
export function isSameOriginRequest(headers: { origin?: string; secFetchSite?: string }, allowedOrigins: readonly string[]): boolean {
  if (headers.origin !== undefined) return allowedOrigins.includes(headers.origin);
  return headers.secFetchSite === 'same-origin';
}

export type KeyStatus = 'Active' | 'Expiring' | 'Expired' | 'Revoked';

/** "Expiring" is a rolled key that still works during its grace; a key made with an expiry is Active until it ends. */
export function keyStatus(key: { revokedAt: number | null; expiresAt: number | null; replaced: boolean }, now: number): KeyStatus {
  if (key.revokedAt !== null) return 'Revoked';
  if (key.expiresAt !== null && key.expiresAt <= now) return 'Expired';
  if (key.replaced && key.expiresAt !== null) return 'Expiring';
  return 'Active';
}

export function labelProblem(label: string): string | undefined {
  if (label.length === 0) return 'Give the key a label';
  if (label.length > MAX_KEY_LABEL_LENGTH) return `Use at most ${MAX_KEY_LABEL_LENGTH} characters`;
  if (CONTROL_CHARACTERS_OR_LONE_SURROGATES.test(label)) return 'The label may not hold control characters or unpaired surrogates';
  return undefined;
}

export type ExpiryChoice = 'never' | '30d' | '90d' | 'date';
const DAY_MS = 86_400_000;
/** A key lives at most a century, as with the CLI. */
const MAX_KEY_LIFETIME_MS = 36_500 * DAY_MS;

/**
 * When a new key expires, or a problem with the choice. A date means the key works through that
 * whole day (UTC): it expires at 23:59:59.999Z.
 */
export function expiryOf(choice: ExpiryChoice, expiresOn: string | undefined, now: number): { expiresAt: number | null } | { problem: string } {
  if (choice === 'never') return { expiresAt: null };
  if (choice === '30d') return { expiresAt: now + 30 * DAY_MS };
  if (choice === '90d') return { expiresAt: now + 90 * DAY_MS };
  if (expiresOn === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(expiresOn)) return { problem: 'Choose a date' };
  const start = Date.parse(`${expiresOn}T00:00:00.000Z`);
  if (Number.isNaN(start) || new Date(start).toISOString().slice(0, 10) !== expiresOn) return { problem: 'Choose a valid date' };
  const end = start + DAY_MS - 1;
  if (end <= now) return { problem: 'Choose a date from today on' };
  if (end - now > MAX_KEY_LIFETIME_MS) return { problem: 'Choose a date within 100 years' };
  return { expiresAt: end };
}

export type GraceChoice = 'now' | '1h' | '24h' | '7d';
/** The grace periods the console offers, for a key's roll and a webhook secret's rotation alike; 24 hours is the CLI's default. */
export const GRACE_MS: Record<GraceChoice, number> = { now: 0, '1h': 3_600_000, '24h': DEFAULT_ROLL_GRACE_MS, '7d': 7 * DAY_MS };
export const GRACE_PROBLEM = 'Choose a grace period: now, 1 hour, 24 hours or 7 days';

/** The grace a request chose, in milliseconds; undefined when it is not one of the choices. */
export function graceMsOf(choice: unknown): number | undefined {
  return typeof choice === 'string' && Object.hasOwn(GRACE_MS, choice) ? GRACE_MS[choice as GraceChoice] : undefined;
}
