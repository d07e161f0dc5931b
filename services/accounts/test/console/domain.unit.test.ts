import { describe, expect, it } from 'vitest';
import {
  expiryOf,
  GRACE_MS,
  hashSecret,
  isSameOriginRequest,
  isSessionLive,
  isValidEmail,
  keyStatus,
  labelProblem,
  newSecret,
  normalizeEmail,
  passwordProblem,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  setPasswordUrl,
  SIGN_IN_WINDOW_MS,
  signInAllowance,
} from '../../src/console/domain.ts';

const NOW = Date.parse('2026-11-23T10:00:00.000Z');

describe('passwords', () => {
  it('need 12 to 256 characters, counted as characters, not UTF-16 units', () => {
    expect(passwordProblem('a'.repeat(11))).toBeDefined();
    expect(passwordProblem('a'.repeat(12))).toBeUndefined();
    expect(passwordProblem('🔑'.repeat(11))).toBeDefined();
    expect(passwordProblem('🔑'.repeat(12))).toBeUndefined();
    expect(passwordProblem('a'.repeat(256))).toBeUndefined();
    expect(passwordProblem('a'.repeat(257))).toBeDefined();
  });
});

describe('emails', () => {
  it('are compared trimmed and lower-cased, and must look like an address', () => {
    expect(normalizeEmail('  Ada@Example.COM ')).toBe('ada@example.com');
    for (const good of ['a@b.co', 'first.last+tag@sub.example.org']) expect(isValidEmail(good)).toBe(true);
    for (const bad of ['', 'a', 'a@b', '@b.co', 'a b@c.de', 'a@b..c', 'a@b.c\u0000', 'a\uD800@b.co', `${'a'.repeat(250)}@b.co`]) expect(isValidEmail(bad), bad).toBe(false);
  });
});

describe('secrets', () => {
  it('are 256 random bits, and stored as a SHA-256 that does not contain them', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newSecret()).not.toBe(secret);
    expect(hashSecret(secret)).toHaveLength(32);
    expect(hashSecret(secret).toString('hex')).not.toContain(Buffer.from(secret).toString('hex'));
  });

  it('set-password links carry the token in the fragment, never the path or query', () => {
    const url = new URL(setPasswordUrl('https://console.example.com/', 'tok_en'));
    expect(url.pathname).toBe('/set-password');
    expect(url.search).toBe('');
    expect(url.hash).toBe('#token=tok_en');
  });
});

describe('sessions', () => {
  it('live while used within 30 minutes and younger than 12 hours', () => {
    const fresh = { createdAt: NOW, lastSeenAt: NOW };
    expect(isSessionLive(fresh, NOW + SESSION_IDLE_MS - 1)).toBe(true);
    expect(isSessionLive(fresh, NOW + SESSION_IDLE_MS)).toBe(false);
    const busy = { createdAt: NOW, lastSeenAt: NOW + SESSION_ABSOLUTE_MS - 1_000 };
    expect(isSessionLive(busy, NOW + SESSION_ABSOLUTE_MS - 1)).toBe(true);
    expect(isSessionLive(busy, NOW + SESSION_ABSOLUTE_MS)).toBe(false);
  });
});

describe('sign-in limits', () => {
  const minutesAgo = (...minutes: number[]) => minutes.map((m) => NOW - m * 60_000);

  it('allow 10 failures per email in 15 minutes, then wait until the oldest counted one leaves the window', () => {
    const nine = minutesAgo(14, 13, 12, 11, 10, 9, 8, 7, 6);
    expect(signInAllowance({ email: nine, address: [] }, NOW)).toEqual({ allowed: true });
    const ten = [...nine, NOW - 60_000];
    expect(signInAllowance({ email: ten, address: [] }, NOW)).toEqual({ allowed: false, retryAfterSeconds: 60 });
    // Failures older than the window do not count.
    expect(signInAllowance({ email: [...minutesAgo(20, 16), ...nine], address: [] }, NOW)).toEqual({ allowed: true });
  });

  it('allow 30 failures per address', () => {
    const times = Array.from({ length: 30 }, (_, i) => NOW - (29 - i) * 10_000);
    expect(signInAllowance({ email: [], address: times.slice(1) }, NOW)).toEqual({ allowed: true });
    const refused = signInAllowance({ email: [], address: times }, NOW);
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: (SIGN_IN_WINDOW_MS - 290_000) / 1000 });
  });
});

describe('the origin check', () => {
  const allowed = ['http://127.0.0.1:4000'];

  it("takes Origin when present, else only a browser's Sec-Fetch-Site: same-origin", () => {
    expect(isSameOriginRequest({ origin: 'http://127.0.0.1:4000' }, allowed)).toBe(true);
    expect(isSameOriginRequest({ origin: 'http://127.0.0.1:4000', secFetchSite: 'cross-site' }, allowed)).toBe(true);
    expect(isSameOriginRequest({ origin: 'http://evil.example', secFetchSite: 'same-origin' }, allowed)).toBe(false);
    expect(isSameOriginRequest({ origin: 'null' }, allowed)).toBe(false);
    expect(isSameOriginRequest({ secFetchSite: 'same-origin' }, allowed)).toBe(true);
    expect(isSameOriginRequest({ secFetchSite: 'same-site' }, allowed)).toBe(false);
    expect(isSameOriginRequest({}, allowed)).toBe(false);
  });
});

describe('keys on the page', () => {
  it('read Revoked, Expired, Expiring (a rolled key in its grace) or Active', () => {
    expect(keyStatus({ revokedAt: NOW - 1, expiresAt: NOW + 1, replaced: true }, NOW)).toBe('Revoked');
    expect(keyStatus({ revokedAt: null, expiresAt: NOW, replaced: true }, NOW)).toBe('Expired');
    expect(keyStatus({ revokedAt: null, expiresAt: NOW + 1, replaced: true }, NOW)).toBe('Expiring');
    expect(keyStatus({ revokedAt: null, expiresAt: NOW + 1, replaced: false }, NOW)).toBe('Active');
    expect(keyStatus({ revokedAt: null, expiresAt: null, replaced: false }, NOW)).toBe('Active');
  });

  it('expire never, in 30 or 90 days, or at the end of a chosen day (UTC)', () => {
    expect(expiryOf('never', undefined, NOW)).toEqual({ expiresAt: null });
    expect(expiryOf('30d', undefined, NOW)).toEqual({ expiresAt: NOW + 30 * 86_400_000 });
    expect(expiryOf('90d', undefined, NOW)).toEqual({ expiresAt: NOW + 90 * 86_400_000 });
    expect(expiryOf('date', '2026-11-23', NOW)).toEqual({ expiresAt: Date.parse('2026-11-23T23:59:59.999Z') });
    for (const bad of [undefined, '2026-11-22', '2026-02-30', '23/11/2026', '2026-11-23T00:00:00Z', '9999-01-01']) {
      expect(expiryOf('date', bad, NOW), String(bad)).toHaveProperty('problem');
    }
  });

  it('roll with a grace of now, 1 hour, 24 hours or 7 days; labels are 1-100 characters without control characters or lone surrogates', () => {
    expect(GRACE_MS).toEqual({ now: 0, '1h': 3_600_000, '24h': 86_400_000, '7d': 604_800_000 });
    expect(labelProblem('bot')).toBeUndefined();
    for (const bad of ['', 'x'.repeat(101), 'tab\there', 'bot \uDC00']) expect(labelProblem(bad), bad).toBeDefined();
    expect(labelProblem('bot \u{1F916}')).toBeUndefined();
  });
});
