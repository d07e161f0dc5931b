import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { API_KEY_SCOPES, isApiKeyScope, type ApiKeyScope } from '@ots/shared/scopes';

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

/**
 * Unkeyed, as GitHub's token checksums are: a secret scanner (or a leak checker in a client) can tell
 * a real key's shape offline, without our secret. So it turns away typos and random strings, not a
 * guesser who computes it; what such guesses cost is bounded by the negative cache and the look-up
 * slots (gateway/src/failed-auth.ts), never by refusing valid keys.
 */
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
const MAX_DURATION_MS = 36_500 * UNIT_MS.d;

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

/** The most characters of a key's label (its name), wherever it is given: the CLI's --name, the console's form. */
export const MAX_KEY_LABEL_LENGTH = 100;

/** The most characters of an account's name, trimmed; the CLI checks it before it connects. */
export const MAX_ACCOUNT_NAME_LENGTH = 200;

/** What the gateway needs to decide on a key; cached, so it holds no secret. */
export interface KeyRecord {
  keyId: string;
  accountId: string;
  expiresAt: number | null;
  revokedAt: number | null;
  apiAccessEnabled: boolean;
  scopes: string[];
  /** Normalised CIDRs (`10.0.0.0/8`, `2001:db8::/32`); empty for any address. */
  allowedCidrs: string[];
}

export type KeyDecision =
  | { kind: 'authenticated'; accountId: string; apiKeyId: string; scopes: readonly string[] }
  | { kind: 'invalid' }
  /** A live key used from outside its allowed addresses: answered as an invalid key, logged as a refusal. */
  | { kind: 'address-refused'; accountId: string; apiKeyId: string }
  | { kind: 'access-disabled'; apiKeyId: string };

/**
 * Contract section 5: unknown, revoked and expired keys are invalid (401), as is a key used from
 * outside its allowed addresses; a disabled account is 403. The address is checked before the
 * account's access, so a prober from elsewhere learns nothing about the account.
 */
export function decideKey(record: KeyRecord | null, now: number, clientAddress?: string): KeyDecision {
  if (!record) return { kind: 'invalid' };
  // Revocation is always immediate; comparing its time with this clock would let a clock behind the database's accept a revoked key.
  if (record.revokedAt !== null) return { kind: 'invalid' };
  if (record.expiresAt !== null && record.expiresAt <= now) return { kind: 'invalid' };
  if (record.allowedCidrs.length > 0 && (clientAddress === undefined || !addressAllowed(record.allowedCidrs, clientAddress))) {
    return { kind: 'address-refused', accountId: record.accountId, apiKeyId: record.keyId };
  }
  if (!record.apiAccessEnabled) return { kind: 'access-disabled', apiKeyId: record.keyId };
  return { kind: 'authenticated', accountId: record.accountId, apiKeyId: record.keyId, scopes: record.scopes };
}

export { API_KEY_SCOPES, type ApiKeyScope };

/**
 * A scope list as the CLI and the console take it (`read,orders:write`): known names only, at least
 * one, returned in the contract's order without repeats; a message naming the problem otherwise.
 */
export function parseScopes(names: readonly string[]): ApiKeyScope[] | { problem: string } {
  const given = names.map((name) => name.trim()).filter((name) => name !== '');
  const unknown = given.find((name) => !isApiKeyScope(name));
  if (unknown !== undefined) return { problem: `unknown scope "${unknown}"; the scopes are ${API_KEY_SCOPES.join(', ')}` };
  if (given.length === 0) return { problem: `a key needs at least one scope: ${API_KEY_SCOPES.join(', ')}` };
  return API_KEY_SCOPES.filter((scope) => given.includes(scope));
}

const MAX_ALLOWED_CIDRS = 32;

/**
 * Allowed addresses as given (`203.0.113.0/24`, `2001:db8::/48`, or a single address): each an IPv4
 * or IPv6 CIDR whose host bits are zero, at most 32, stored in canonical form without repeats. A
 * single address stands for its /32 or /128.
 */
export function parseCidrs(entries: readonly string[]): string[] | { problem: string } {
  const given = entries.map((entry) => entry.trim()).filter((entry) => entry !== '');
  const cidrs: string[] = [];
  for (const entry of given) {
    const cidr = canonicalCidr(entry);
    if (cidr === undefined) return { problem: `"${entry}" is not an IPv4 or IPv6 address or CIDR (e.g. 203.0.113.0/24, 2001:db8::/48)` };
    if (typeof cidr === 'object') return cidr;
    if (!cidrs.includes(cidr)) cidrs.push(cidr);
  }
  if (cidrs.length > MAX_ALLOWED_CIDRS) return { problem: `a key may have at most ${MAX_ALLOWED_CIDRS} allowed addresses` };
  return cidrs;
}

function canonicalCidr(entry: string): string | { problem: string } | undefined {
  const [address = '', prefix, ...rest] = entry.split('/');
  // ipaddr.js also takes IPv4 shorthands such as `10.1` or hexadecimal parts; only dotted quads are addresses here.
  const ipv4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (rest.length > 0 || (!ipv4 && !ipaddr.IPv6.isValid(address))) return undefined;
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return undefined;
  if (address.includes('%')) return { problem: `"${entry}" has a zone id (%…): an allowed address names a network, not an interface` };
  const bits = ipv4 ? 32 : 128;
  const length = prefix === undefined ? bits : Number(prefix);
  if (length > bits) return undefined;
  const parsed = ipaddr.parse(address);
  const network = ipv4 ? ipaddr.IPv4.networkAddressFromCIDR(`${address}/${length}`) : ipaddr.IPv6.networkAddressFromCIDR(`${address}/${length}`);
  if (network.toString() !== parsed.toString()) return { problem: `"${entry}" has host bits set; did you mean ${network.toString()}/${length}?` };
  // A client in this form is matched as the IPv4 address it carries (`clientIp`), so its range is kept
  // as that IPv4 range. Its prefix is at least 96: a shorter one would have host bits set (the ffff).
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) return `${(parsed as ipaddr.IPv6).toIPv4Address().toString()}/${length - 96}`;
  return `${parsed.toString()}/${length}`;
}

const parsedCidrs = new WeakMap<readonly string[], [ipaddr.IPv4 | ipaddr.IPv6, number][]>();

/** An IPv4 client seen on a dual-stack socket (`::ffff:203.0.113.7`) is the IPv4 address it carries. */
function clientIp(clientAddress: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (!ipaddr.isValid(clientAddress)) return undefined;
  const address = ipaddr.parse(clientAddress);
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : address;
}

/**
 * The client a failed authentication counts against: an IPv4 address, or an IPv6 client's /64, since
 * one IPv6 client holds a whole /64 and would otherwise get a fresh allowance from each address of it.
 */
export function failedAuthClientOf(clientAddress: string): string {
  const address = clientIp(clientAddress);
  if (!address || address.kind() === 'ipv4') return address?.toString() ?? clientAddress;
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${parts.join(':')}::/64`;
}

const MAX_USER_AGENT_LENGTH = 512;

/**
 * A client's User-Agent as the security log keeps it: every control character removed (C0, DEL and
 * C1, such as CSI U+009B and OSC U+009D, which a terminal acts on when `key events` prints the log),
 * at most 512 characters, null when nothing is left.
 */
export function userAgentForLog(userAgent: string | null | undefined): string | null {
  return userAgent?.replace(/\p{Cc}/gu, '').slice(0, MAX_USER_AGENT_LENGTH) || null;
}

/** The address as the security log shows it: `203.0.113.7` rather than its dual-stack form. */
export function canonicalAddress(clientAddress: string): string {
  return clientIp(clientAddress)?.toString() ?? clientAddress;
}

function addressAllowed(cidrs: readonly string[], clientAddress: string): boolean {
  const address = clientIp(clientAddress);
  if (!address) return false;
  let ranges = parsedCidrs.get(cidrs);
  if (!ranges) {
    // A range saved in IPv4-mapped form before `canonicalCidr` turned such ranges into IPv4 is matched as the IPv4 range it names.
    ranges = cidrs.map((cidr) => {
      const [network, length] = ipaddr.parseCIDR(cidr);
      const mapped = network.kind() === 'ipv6' && (network as ipaddr.IPv6).isIPv4MappedAddress();
      return mapped ? [(network as ipaddr.IPv6).toIPv4Address(), length - 96] : [network, length];
    });
    parsedCidrs.set(cidrs, ranges);
  }
  return ranges.some(([network, length]) => network.kind() === address.kind() && address.match(network, length));
}

/**
 * When a roll's new key expires: a key made to expire (say 90 days after it was made) is replaced by
 * one with the same lifetime from now, not by one that never expires, which would quietly undo the
 * rotation policy it was made under; a key without expiry is replaced by one without.
 */
export function successorExpiry(previous: { createdAt: number; expiresAt: number | null }, now: number): number | null {
  return previous.expiresAt === null ? null : now + (previous.expiresAt - previous.createdAt);
}

/** A rolled key's predecessor stops at the end of the grace, or sooner if it was due to expire sooner. */
export function expiryAfterRoll(currentExpiry: number | null, now: number, graceMs: number): number {
  const graceEnd = now + graceMs;
  return currentExpiry === null ? graceEnd : Math.min(currentExpiry, graceEnd);
}

export type SecurityEventType =
  | 'key.created'
  | 'key.rolled'
  | 'key.revoked'
  | 'key.updated'
  | 'key.refused_address'
  | 'sign_in.succeeded'
  | 'sign_in.failed'
  | 'password.set';

/** Who made a change, as the security log shows it: an owner in the console, or the operator's CLI (all null). */
export interface Actor {
  ownerId: string | null;
  ownerEmail: string | null;
  clientAddress: string | null;
  userAgent: string | null;
}

export const OPERATOR: Actor = { ownerId: null, ownerEmail: null, clientAddress: null, userAgent: null };
