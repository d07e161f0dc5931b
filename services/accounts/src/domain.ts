import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const LIVE_PREFIX = 'svc_live_';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 32 base62 characters carry 190.5 bits (contract: at least 190). */
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${LIVE_PREFIX}([0-9A-Za-z]{${RANDOM_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`);

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 × 62: bytes at or above it are dropped so that every character is equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

function checksumOf(prefixAndRandom: string): string {
  let value = createHash('sha256').update(prefixAndRandom).digest().readUIntBE(0, 5);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i += 1) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/** A new live key: prefix, 32 random base62 characters from the CSPRNG, and a 6-character checksum. */
export function generateApiKey(): string {
  const body = LIVE_PREFIX + randomBase62(RANDOM_LENGTH);
  return body + checksumOf(body);
}

/**
 * True when the key has the live shape and its checksum matches: a mistyped or made-up key is
 * refused here, without a database or cache look-up. Sandbox keys are not issued yet, so they fail too.
 */
export function isWellFormedApiKey(key: string): boolean {
  const match = KEY_PATTERN.exec(key);
  if (!match) return false;
  const expected = Buffer.from(checksumOf(LIVE_PREFIX + match[1]));
  const given = Buffer.from(match[2]!);
  return timingSafeEqual(expected, given);
}

/** The only form in which a key is stored or cached: HMAC-SHA-256 under the server secret. */
export function hashApiKey(secret: Buffer, key: string): Buffer {
  return createHmac('sha256', secret).update(key, 'utf8').digest();
}

export function hashesMatch(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `svc_live_Ab3x…9fQe`: enough to recognise a key in a list, never enough to use it. */
export function displayPrefixOf(key: string): string {
  return `${LIVE_PREFIX}${key.slice(LIVE_PREFIX.length, LIVE_PREFIX.length + 4)}…${key.slice(-4)}`;
}

const DURATION = /^(\d{1,9})([smhd])$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** A key lives at most a century: longer is a typo, and a date beyond it would not be stored. */
export const MAX_DURATION_MS = 36_500 * UNIT_MS.d;

// As the API's strings (contract section 2): control characters are invisible in every list that
// shows a name, and a lone surrogate would be stored as U+FFFD.
const CONTROL_CHARACTER_OR_LONE_SURROGATE = /[\p{Cc}\p{Cs}]/u;

/** What is wrong with a name given to the CLI (`what`, e.g. "account name"), or undefined. */
export function nameProblem(what: string, name: string, maxLength: number): string | undefined {
  if (name.trim() === '') return `${what} must not be blank`;
  if (name.length > maxLength) return `${what} must be at most ${maxLength} characters`;
  if (CONTROL_CHARACTER_OR_LONE_SURROGATE.test(name)) return `${what} must not contain control characters (such as a tab) or unpaired surrogates`;
  return undefined;
}

/** `30s`, `15m`, `12h`, `90d`: a whole number and a unit, at most 36500d. Undefined when the text is not one. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return ms <= MAX_DURATION_MS ? ms : undefined;
}

export const DEFAULT_ROLL_GRACE_MS = 24 * 3_600_000;

/** What the gateway needs to decide on a key; cached, so it holds no secret. */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  expiresAt: number | null;
  revokedAt: number | null;
  apiAccessEnabled: boolean;
}

export type KeyDecision =
  | { kind: 'authenticated'; accountId: string; apiKeyId: string }
  | { kind: 'invalid' }
  | { kind: 'access-disabled' };

/** Contract section 5: unknown, revoked and expired keys are invalid (401); a disabled account is 403. */
export function decideKey(record: KeyRecord | null, now: number): KeyDecision {
  if (!record) return { kind: 'invalid' };
  // Revocation is always immediate; comparing its time with this clock would let a clock behind the database's accept a revoked key.
  if (record.revokedAt !== null) return { kind: 'invalid' };
  if (record.expiresAt !== null && record.expiresAt <= now) return { kind: 'invalid' };
  if (!record.apiAccessEnabled) return { kind: 'access-disabled' };
  return { kind: 'authenticated', accountId: record.accountId, apiKeyId: record.keyId };
}

/** A rolled key's predecessor stops at the end of the grace, or sooner if it was due to expire sooner. */
export function expiryAfterRoll(currentExpiry: number | null, now: number, graceMs: number): number {
  const graceEnd = now + graceMs;
  return currentExpiry === null ? graceEnd : Math.min(currentExpiry, graceEnd);
}

export type SecurityEventType = 'key.created' | 'key.rolled' | 'key.revoked' | 'sign_in.succeeded' | 'sign_in.failed' | 'password.set';

/** Who made a change, as the security log shows it: an owner in the console, or the operator's CLI (all null). */
export interface Actor {
  ownerId: string | null;
  ownerEmail: string | null;
  clientAddress: string | null;
  userAgent: string | null;
}

export const OPERATOR: Actor = { ownerId: null, ownerEmail: null, clientAddress: null, userAgent: null };
