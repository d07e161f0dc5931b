import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../src/rate-limit.ts';

const T0 = Date.UTC(2026, 10, 21, 14, 0, 0);

describe('RateLimiter (per key token bucket)', () => {
  it('allows a burst of 100, then refuses the 101st with a Retry-After of at least a second', () => {
    const limiter = new RateLimiter(50, 100, 'api-key');
    for (let i = 0; i < 100; i += 1) {
      const taken = limiter.take('key-a', T0);
      expect(taken.allowed, `request ${i + 1}`).toBe(true);
      expect(taken.remaining).toBe(99 - i);
    }
    const refused = limiter.take('key-a', T0);
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(0);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(Number.isInteger(refused.retryAfterSeconds)).toBe(true);
  });

  it('refills at the sustained rate: 50 per second', () => {
    const limiter = new RateLimiter(50, 100, 'api-key');
    for (let i = 0; i < 100; i += 1) limiter.take('key-a', T0);
    expect(limiter.take('key-a', T0 + 10).allowed).toBe(false);
    // 20 ms at 50/s is one token.
    expect(limiter.take('key-a', T0 + 30).allowed).toBe(true);
    expect(limiter.take('key-a', T0 + 30).allowed).toBe(false);
    // One second later: 50 more, not 51.
    let allowed = 0;
    for (let i = 0; i < 60; i += 1) if (limiter.take('key-a', T0 + 1_030).allowed) allowed += 1;
    expect(allowed).toBe(50);
  });

  it('never holds more than the burst, however long a key was idle', () => {
    const limiter = new RateLimiter(50, 100, 'api-key');
    limiter.take('key-a', T0);
    let allowed = 0;
    for (let i = 0; i < 150; i += 1) if (limiter.take('key-a', T0 + 3_600_000).allowed) allowed += 1;
    expect(allowed).toBe(100);
  });

  it('keeps keys apart: one key at its limit does not slow another', () => {
    const limiter = new RateLimiter(1, 5, 'api-key');
    for (let i = 0; i < 5; i += 1) expect(limiter.take('busy', T0).allowed).toBe(true);
    expect(limiter.take('busy', T0).allowed).toBe(false);
    expect(limiter.take('quiet', T0).allowed).toBe(true);
  });

  it('with a burst of 5 at 1 per second: the 6th quick request waits 1 s', () => {
    const limiter = new RateLimiter(1, 5, 'api-key');
    for (let i = 0; i < 5; i += 1) limiter.take('key', T0 + i);
    const sixth = limiter.take('key', T0 + 5);
    expect(sixth).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    expect(limiter.take('key', T0 + 5 + 1_000).allowed).toBe(true);
  });

  it('forgets the buckets it follows for Redis once they would be full again, though it never takes from them', () => {
    const limiter = new RateLimiter(50, 100, 'api-key');
    const start = Date.now();
    limiter.seed('key-seen-once', 40, start);
    expect(limiter.tokensOf('key-seen-once', start)).toBe(40);
    // Past the sweep interval, and past the two seconds a bucket takes to fill up again.
    limiter.seed('another-key', 40, start + 61_000);
    expect(limiter.tokensOf('key-seen-once', start + 61_000)).toBeUndefined();
    expect(limiter.tokensOf('another-key', start + 61_000)).toBe(40);
  });

  it('describes itself in IETF RateLimit-Policy and RateLimit headers', () => {
    const limiter = new RateLimiter(50, 100, 'api-key');
    const state = limiter.take('key', T0);
    expect(limiter.headers(state)).toEqual({
      'RateLimit-Policy': '"api-key";q=100;w=2',
      RateLimit: '"api-key";r=99;t=1',
    });
    for (let i = 0; i < 99; i += 1) limiter.take('key', T0);
    const empty = limiter.take('key', T0);
    // Empty bucket: nothing remains, and it is full again after burst / rate = 2 s.
    expect(limiter.headers(empty)).toEqual({ 'RateLimit-Policy': '"api-key";q=100;w=2', RateLimit: '"api-key";r=0;t=2' });
  });
});
