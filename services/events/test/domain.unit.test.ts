import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  activeSecrets,
  decideAfterFailure,
  DELIVERY_TIMEOUT_MS,
  DELIVERY_WINDOW_MS,
  failureStreakStart,
  newSigningSecret,
  RETRY_DELAYS_MS,
  shouldDisable,
  validateEventTypes,
  validateUrlSyntax,
} from '../src/domain.ts';
import { openSecret, sealSecret } from '@ots/shared/secret-box';

const at = (iso: string) => new Date(iso);

describe('retry schedule', () => {
  it('waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 10 h, each within ±10 %', () => {
    const start = at('2026-11-23T00:00:00.000Z');
    const hour = 3600_000;
    expect(RETRY_DELAYS_MS).toEqual([5_000, 300_000, 1_800_000, 2 * hour, 5 * hour, 10 * hour]);
    for (let attempts = 1; attempts <= 8; attempts += 1) {
      const base = RETRY_DELAYS_MS[Math.min(attempts, RETRY_DELAYS_MS.length) - 1]!;
      for (const [random, factor] of [[0, 0.9], [0.5, 1], [0.999999, 1.1]] as const) {
        const decision = decideAfterFailure(start, attempts, { attemptedAt: start, durationMs: 0 }, random);
        expect(decision.kind).toBe('retry');
        expect(decision.kind === 'retry' && decision.at.getTime() - start.getTime()).toBeCloseTo(base * factor, -2);
      }
    }
  });

  it('gives up when the next attempt would fall beyond 3 days of the first', () => {
    const start = at('2026-11-23T00:00:00.000Z');
    const late = new Date(start.getTime() + DELIVERY_WINDOW_MS - 9 * 3600_000);
    expect(decideAfterFailure(start, 9, { attemptedAt: late, durationMs: 0 }, 0.5)).toEqual({ kind: 'failed' });
    const earlier = new Date(start.getTime() + DELIVERY_WINDOW_MS - 11 * 3600_000);
    expect(decideAfterFailure(start, 9, { attemptedAt: earlier, durationMs: 0 }, 0.5).kind).toBe('retry');
  });

  it('counts the wait from the end of the attempt: a time-out at 10 s is retried 5 s later, not at once', () => {
    const start = at('2026-11-23T00:00:00.000Z');
    const decision = decideAfterFailure(start, 1, { attemptedAt: start, durationMs: 10_000 }, 0.5);
    expect(decision).toEqual({ kind: 'retry', at: at('2026-11-23T00:00:15.000Z') });
  });

  it('disables after 5 days of failures, not before', () => {
    const since = at('2026-11-01T00:00:00.000Z');
    expect(shouldDisable(since, at('2026-11-05T23:59:59.999Z'))).toBe(false);
    expect(shouldDisable(since, at('2026-11-06T00:00:00.000Z'))).toBe(true);
  });

  it('counts a failure in the run while it follows the last one within the longest wait between retries, and an hour more, and starts a new run after a longer spell without attempts', () => {
    const since = at('2026-11-01T00:00:00.000Z');
    const lastFailedAt = at('2026-11-03T00:00:00.000Z');
    // The latest a retry can come: the 10 h wait with the most jitter, after an attempt that ran to the time-out.
    const latestRetry = decideAfterFailure(since, 20, { attemptedAt: lastFailedAt, durationMs: DELIVERY_TIMEOUT_MS }, 0.999_999);
    if (latestRetry.kind !== 'retry') throw new Error('expected a retry');
    expect(failureStreakStart({ failingSince: since, lastFailedAt }, latestRetry.at)).toEqual(since);
    // And an hour more for the dispatcher's own delays.
    const longestGap = 10 * 3600_000 * 1.1 + DELIVERY_TIMEOUT_MS + 3600_000;
    expect(failureStreakStart({ failingSince: since, lastFailedAt }, new Date(lastFailedAt.getTime() + longestGap))).toEqual(since);
    const afterGap = new Date(lastFailedAt.getTime() + longestGap + 1);
    expect(failureStreakStart({ failingSince: since, lastFailedAt }, afterGap)).toEqual(afterGap);
    // A week of quiet, then one failure: a new run from it, nowhere near 5 days.
    const weekLater = at('2026-11-10T00:00:00.000Z');
    expect(failureStreakStart({ failingSince: since, lastFailedAt }, weekLater)).toEqual(weekLater);
    expect(shouldDisable(failureStreakStart({ failingSince: since, lastFailedAt }, weekLater), weekLater)).toBe(false);
    // No run yet (or one ended by a success or by enabling): this failure starts one.
    expect(failureStreakStart({ failingSince: null, lastFailedAt }, weekLater)).toEqual(weekLater);
    expect(failureStreakStart({ failingSince: null, lastFailedAt: null }, weekLater)).toEqual(weekLater);
  });
});

describe('secrets', () => {
  it('are whsec_ and 32 random bytes', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(secret);
  });

  it('sign with the previous secret too until its grace ends', () => {
    const endpoint = { secret: 'new', previous_secret: 'old', previous_secret_expires_at: at('2026-11-23T12:00:00.000Z') };
    expect(activeSecrets(endpoint, at('2026-11-23T11:59:59.999Z'))).toEqual(['new', 'old']);
    expect(activeSecrets(endpoint, at('2026-11-23T12:00:00.000Z'))).toEqual(['new']);
    expect(activeSecrets({ secret: 'only', previous_secret: null, previous_secret_expires_at: null }, new Date())).toEqual(['only']);
  });
});

describe('endpoint input', () => {
  it('takes https anywhere, http only outside production, and refuses literal private addresses in production', () => {
    expect(validateUrlSyntax('https://example.com/hooks', true).ok).toBe(true);
    expect(validateUrlSyntax('http://127.0.0.1:8080/hooks', false).ok).toBe(true);
    expect(validateUrlSyntax('http://example.com/hooks', true).ok).toBe(false);
    expect(validateUrlSyntax('https://192.168.0.10/hooks', true).ok).toBe(false);
    expect(validateUrlSyntax('https://192.168.0.10/hooks', false).ok).toBe(true);
    expect(validateUrlSyntax('https://example.com/a#b', false).ok).toBe(false);
    expect(validateUrlSyntax('https://example.com/\u0000', false).ok).toBe(false);
  });

  it('knows every event type and dedupes them', () => {
    expect(validateEventTypes(['strategy.paused', 'strategy.paused', 'fill.recorded'])).toEqual({ ok: true, value: ['strategy.paused', 'fill.recorded'] });
    expect(validateEventTypes(['strategy.paused', 'Strategy.Paused']).ok).toBe(false);
  });
});

describe('signing secrets at rest', () => {
  it('are sealed, open only with the key and for the account they belong to', () => {
    const key = randomBytes(32);
    const secret = newSigningSecret();
    const sealed = sealSecret(key, secret, 'account-a');
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(sealed).toMatch(/^v1\./);
    expect(openSecret(key, sealed, 'account-a')).toBe(secret);
    expect(() => openSecret(key, sealed, 'account-b')).toThrow();
    expect(() => openSecret(randomBytes(32), sealed, 'account-a')).toThrow();
    // A tag cut short would leave a forger only 32 bits to guess.
    const [version, iv, ciphertext, tag] = sealed.split('.');
    const shortTag = Buffer.from(tag!, 'base64url').subarray(0, 4).toString('base64url');
    expect(() => openSecret(key, [version, iv, ciphertext, shortTag].join('.'), 'account-a')).toThrow('malformed');
  });
});
