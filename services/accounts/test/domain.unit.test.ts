import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ROLL_GRACE_MS,
  LIVE_PREFIX,
  decideKey,
  displayPrefixOf,
  expiryAfterRoll,
  successorExpiry,
  generateApiKey,
  hashApiKey,
  hashesMatch,
  isWellFormedApiKey,
  parseCidrs,
  parseDuration,
  parseScopes,
  type KeyRecord,
} from '../src/domain.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_SHAPE = /^svc_live_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

/** The key with the character at `index` replaced by another base62 character. */
function withCharacterChanged(key: string, index: number, shift = 1): string {
  const current = BASE62.indexOf(key[index]!);
  return key.slice(0, index) + BASE62[(current + shift) % 62] + key.slice(index + 1);
}

describe('generateApiKey', () => {
  it('is svc_live_ followed by 32 random base62 characters and a 6-character checksum', () => {
    const key = generateApiKey();
    expect(key).toMatch(KEY_SHAPE);
    expect(key.startsWith(LIVE_PREFIX)).toBe(true);
    expect(key).toHaveLength('svc_live_'.length + 38);
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('carries at least 190 bits of randomness: 32 characters over the whole base62 alphabet', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i += 1) for (const ch of KEY_SHAPE.exec(generateApiKey())![1]!) seen.add(ch);
    // Every one of the 62 symbols occurs (16,000 draws), so each character carries log2(62) bits.
    expect(seen.size).toBe(62);
    expect(32 * Math.log2(seen.size)).toBeGreaterThanOrEqual(190);
  });

  it('gives every character position an even spread (no fixed or biased positions)', () => {
    const counts = Array.from({ length: 32 }, () => new Map<string, number>());
    const n = 3_000;
    for (let i = 0; i < n; i += 1) {
      const random = KEY_SHAPE.exec(generateApiKey())![1]!;
      [...random].forEach((ch, position) => counts[position]!.set(ch, (counts[position]!.get(ch) ?? 0) + 1));
    }
    for (const positionCounts of counts) {
      // Expected ~48 per symbol; a fixed or strongly biased position would show far fewer symbols or a spike.
      expect(positionCounts.size).toBeGreaterThan(55);
      expect(Math.max(...positionCounts.values())).toBeLessThan(n / 62 * 2.5);
    }
  });

  it('never repeats over many keys', () => {
    const keys = new Set(Array.from({ length: 20_000 }, () => generateApiKey()));
    expect(keys.size).toBe(20_000);
  });
});

describe('isWellFormedApiKey: the checksum refuses mistyped and made-up keys', () => {
  it('refuses a key with any single character changed, in the random part or the checksum', () => {
    for (let round = 0; round < 5; round += 1) {
      const key = generateApiKey();
      for (let index = LIVE_PREFIX.length; index < key.length; index += 1) {
        for (const shift of [1, 26, 61]) {
          const mistyped = withCharacterChanged(key, index, shift);
          expect(isWellFormedApiKey(mistyped), `${mistyped} (position ${index})`).toBe(false);
        }
      }
    }
  });

  it('refuses a key with two neighbouring characters swapped', () => {
    const key = generateApiKey();
    for (let index = LIVE_PREFIX.length; index < key.length - 1; index += 1) {
      if (key[index] === key[index + 1]) continue;
      const swapped = key.slice(0, index) + key[index + 1] + key[index] + key.slice(index + 2);
      expect(isWellFormedApiKey(swapped)).toBe(false);
    }
  });

  it('refuses made-up keys of the right shape', () => {
    expect(isWellFormedApiKey(`svc_live_${'A'.repeat(38)}`)).toBe(false);
    expect(isWellFormedApiKey(`svc_live_${'0123456789abcdefghijABCDEFGHIJ0123456789'.slice(0, 38)}`)).toBe(false);
  });

  it('refuses sandbox keys (not issued yet) and unknown prefixes', () => {
    const rest = generateApiKey().slice(LIVE_PREFIX.length);
    for (const prefix of ['svc_sandbox_', 'svc_test_', 'SVC_LIVE_', 'svc_Live_', 'sk_live_', 'svc_live', 'svc-live-', '']) {
      expect(isWellFormedApiKey(prefix + rest), prefix).toBe(false);
    }
  });

  it('refuses keys that are too short, too long, padded or carry other characters', () => {
    const key = generateApiKey();
    for (const bad of [key.slice(0, -1), `${key}A`, ` ${key}`, `${key} `, `${key}\n`, key.replace(/.$/, '_'), key.replace(/.$/, '-'), 'svc_live_', '']) {
      expect(isWellFormedApiKey(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('hashApiKey', () => {
  const secret = Buffer.from('a-test-secret-of-at-least-32-characters!!');
  const otherSecret = Buffer.from('another-secret-of-at-least-32-characters');

  it('is HMAC-SHA-256 of the key under the server secret, and deterministic', () => {
    const key = generateApiKey();
    const hash = hashApiKey(secret, key);
    expect(hash).toHaveLength(32);
    expect(hash.equals(hashApiKey(secret, key))).toBe(true);
    expect(hash.equals(createHmac('sha256', secret).update(key).digest())).toBe(true);
  });

  it('depends on the secret and on every key', () => {
    const key = generateApiKey();
    expect(hashApiKey(secret, key).equals(hashApiKey(otherSecret, key))).toBe(false);
    expect(hashApiKey(secret, key).equals(hashApiKey(secret, generateApiKey()))).toBe(false);
  });

  it('does not contain the key', () => {
    const key = generateApiKey();
    const hash = hashApiKey(secret, key);
    expect(hash.toString('hex')).not.toContain(key.slice(LIVE_PREFIX.length, LIVE_PREFIX.length + 8));
    expect(hash.toString('latin1')).not.toContain(key.slice(LIVE_PREFIX.length, LIVE_PREFIX.length + 8));
  });

  it('hashesMatch compares hashes, refusing different ones and different lengths', () => {
    const a = hashApiKey(secret, generateApiKey());
    expect(hashesMatch(a, Buffer.from(a))).toBe(true);
    expect(hashesMatch(a, hashApiKey(secret, generateApiKey()))).toBe(false);
    expect(hashesMatch(a, a.subarray(0, 16))).toBe(false);
  });
});

describe('displayPrefixOf', () => {
  it('is the prefix, the first 4 and the last 4 characters', () => {
    const key = `svc_live_Ab3x${'Q'.repeat(30)}9fQe`;
    expect(displayPrefixOf(key)).toBe('svc_live_Ab3x…9fQe');
  });

  it('of a generated key: recognisable, yet far too little to use', () => {
    const key = generateApiKey();
    const shown = displayPrefixOf(key);
    expect(shown).toMatch(/^svc_live_[0-9A-Za-z]{4}…[0-9A-Za-z]{4}$/);
    expect(shown).toBe(`svc_live_${key.slice(9, 13)}…${key.slice(-4)}`);
    expect(isWellFormedApiKey(shown)).toBe(false);
  });
});

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['0s', 0],
    ['15m', 15 * 60_000],
    ['12h', 12 * 3_600_000],
    ['24h', DEFAULT_ROLL_GRACE_MS],
    ['90d', 90 * 86_400_000],
    ['1d', 86_400_000],
    ['36500d', 36_500 * 86_400_000],
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['5x', '', 's', '30', '30S', '1.5h', '-1s', '+1s', ' 30s', '30s ', '30 s', '1h30m', '90days', 'd90', '1e3s', '36501d', '99999999d'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('the default grace of a roll is 24 hours', () => {
    expect(DEFAULT_ROLL_GRACE_MS).toBe(24 * 3_600_000);
  });
});

describe('decideKey', () => {
  const now = Date.UTC(2026, 10, 21, 14, 0, 0);
  const live: KeyRecord = {
    keyId: 'key-1',
    accountId: 'account-1',
    expiresAt: null,
    revokedAt: null,
    apiAccessEnabled: true,
    scopes: ['read'],
    allowedCidrs: [],
  };
  const fenced: KeyRecord = { ...live, allowedCidrs: ['203.0.113.0/24', '2001:db8::/32'] };

  it.each<[string, KeyRecord | null, ReturnType<typeof decideKey>]>([
    ['an unknown key', null, { kind: 'invalid' }],
    ['a revoked key', { ...live, revokedAt: now - 1 }, { kind: 'invalid' }],
    ['a key revoked exactly now', { ...live, revokedAt: now }, { kind: 'invalid' }],
    // The revocation time comes from the database's clock; a gateway clock behind it must not revive the key.
    ['a key revoked "in the future" of a gateway whose clock is behind', { ...live, revokedAt: now + 60_000 }, { kind: 'invalid' }],
    ['an expired key', { ...live, expiresAt: now - 1 }, { kind: 'invalid' }],
    ['a key expiring exactly now', { ...live, expiresAt: now }, { kind: 'invalid' }],
    ['a revoked key of a disabled account', { ...live, revokedAt: now - 1, apiAccessEnabled: false }, { kind: 'invalid' }],
    ['an expired key of a disabled account', { ...live, expiresAt: now - 1, apiAccessEnabled: false }, { kind: 'invalid' }],
    ['a valid key of a disabled account', { ...live, apiAccessEnabled: false }, { kind: 'access-disabled', apiKeyId: live.keyId }],
    ['a valid key', live, { kind: 'authenticated', accountId: 'account-1', apiKeyId: 'key-1', scopes: ['read'] }],
    ['a key expiring in 1 ms', { ...live, expiresAt: now + 1 }, { kind: 'authenticated', accountId: 'account-1', apiKeyId: 'key-1', scopes: ['read'] }],
  ])('%s', (_what, record, decision) => {
    expect(decideKey(record, now, '198.51.100.1')).toEqual(decision);
  });

  it.each([
    ['203.0.113.7', true],
    ['::ffff:203.0.113.7', true],
    ['2001:db8:1::5', true],
    ['203.0.114.1', false],
    ['2001:db9::1', false],
    ['::ffff:198.51.100.1', false],
  ])('a key with allowed addresses, used from %s: accepted %s', (address, accepted) => {
    expect(decideKey(fenced, now, address).kind).toBe(accepted ? 'authenticated' : 'address-refused');
  });

  it('an address refusal is decided before the account\'s access, so a prober learns nothing of the account', () => {
    expect(decideKey({ ...fenced, apiAccessEnabled: false }, now, '198.51.100.1').kind).toBe('address-refused');
    expect(decideKey({ ...fenced, revokedAt: now - 1 }, now, '198.51.100.1').kind).toBe('invalid');
  });
});

describe('parseScopes and parseCidrs', () => {
  it('scopes come back in the contract\'s order, without repeats', () => {
    expect(parseScopes(['fills:write', 'read', 'read'])).toEqual(['read', 'fills:write']);
    expect(parseScopes(['admin'])).toEqual({ problem: expect.stringContaining('unknown scope "admin"') });
    expect(parseScopes([])).toEqual({ problem: expect.stringContaining('at least one scope') });
  });

  it('CIDRs are stored canonical: a single address is its /32 or /128, IPv6 compressed', () => {
    expect(parseCidrs(['203.0.113.0/24', '198.51.100.7', '2001:0db8:0000::/32', '::1'])).toEqual(['203.0.113.0/24', '198.51.100.7/32', '2001:db8::/32', '::1/128']);
    expect(parseCidrs(['10.0.0.0/8', '10.0.0.0/8'])).toEqual(['10.0.0.0/8']);
    expect(parseCidrs([])).toEqual([]);
  });

  it.each(['10.1', '0x0a.0.0.1', '10.0.0.0/33', '2001:db8::/129', '10.0.0.0/8/8', 'example.com', '10.0.0.0/-1', '10.0.0.0/'])('%j is refused', (entry) => {
    expect(parseCidrs([entry])).toEqual({ problem: expect.any(String) });
  });

  it('host bits set are refused with the network meant', () => {
    expect(parseCidrs(['10.1.2.3/8'])).toEqual({ problem: expect.stringContaining('10.0.0.0/8') });
  });

  it('an IPv4 address or range in its IPv4-mapped IPv6 form (as a dual-stack log shows it) is kept as IPv4, and the key is accepted from it', () => {
    const cidrs = parseCidrs(['::ffff:203.0.113.7', '::ffff:198.51.100.0/120']);
    expect(cidrs).toEqual(['203.0.113.7/32', '198.51.100.0/24']);
    const record: KeyRecord = { keyId: 'key-1', accountId: 'account-1', expiresAt: null, revokedAt: null, apiAccessEnabled: true, scopes: ['read'], allowedCidrs: cidrs as string[] };
    for (const address of ['203.0.113.7', '::ffff:203.0.113.7', '198.51.100.200', '::ffff:198.51.100.200']) {
      expect(decideKey(record, Date.now(), address).kind, address).toBe('authenticated');
    }
    expect(decideKey(record, Date.now(), '203.0.113.8').kind).toBe('address-refused');
    expect(parseCidrs(['::ffff:0:0/96'])).toEqual(['0.0.0.0/0']);
  });

  it('a range saved in IPv4-mapped form by a release before admits the IPv4 client it names', () => {
    const record: KeyRecord = { keyId: 'key-1', accountId: 'account-1', expiresAt: null, revokedAt: null, apiAccessEnabled: true, scopes: ['read'], allowedCidrs: ['::ffff:cb00:7107/128', '::ffff:c633:6400/120'] };
    for (const address of ['203.0.113.7', '::ffff:203.0.113.7', '198.51.100.200']) expect(decideKey(record, Date.now(), address).kind, address).toBe('authenticated');
    expect(decideKey(record, Date.now(), '203.0.113.8').kind).toBe('address-refused');
  });

  it('a zone id is refused as such', () => {
    expect(parseCidrs(['fe80::1%eth0'])).toEqual({ problem: expect.stringContaining('zone id') });
  });

  it('at most 32', () => {
    const many = Array.from({ length: 33 }, (_, i) => `10.0.${i}.0/24`);
    expect(parseCidrs(many)).toEqual({ problem: expect.stringContaining('at most 32') });
    expect(parseCidrs(many.slice(0, 32))).toHaveLength(32);
  });
});

describe('successorExpiry', () => {
  const now = Date.UTC(2026, 10, 21, 14, 0, 0);
  const day = 86_400_000;

  it("a key made to expire is replaced by one with its lifetime from now, however much of it was left", () => {
    expect(successorExpiry({ createdAt: now - 80 * day, expiresAt: now + 10 * day }, now)).toBe(now + 90 * day);
  });

  it('a key without expiry is replaced by one without', () => {
    expect(successorExpiry({ createdAt: now - day, expiresAt: null }, now)).toBeNull();
  });
});

describe('expiryAfterRoll', () => {
  const now = Date.UTC(2026, 10, 21, 14, 0, 0);

  it('a key without expiry stops at the end of the grace', () => {
    expect(expiryAfterRoll(null, now, 3_600_000)).toBe(now + 3_600_000);
  });

  it('a grace of 0 ends it now', () => {
    expect(expiryAfterRoll(null, now, 0)).toBe(now);
    expect(expiryAfterRoll(now + 86_400_000, now, 0)).toBe(now);
  });

  it('a key due to expire before the grace ends keeps its earlier expiry', () => {
    expect(expiryAfterRoll(now + 60_000, now, 3_600_000)).toBe(now + 60_000);
  });

  it('a key due to expire after the grace ends stops at the end of the grace', () => {
    expect(expiryAfterRoll(now + 7 * 86_400_000, now, DEFAULT_ROLL_GRACE_MS)).toBe(now + DEFAULT_ROLL_GRACE_MS);
  });
});
