import type { Redis } from 'ioredis';
import { rateLimitRefusals } from '@ots/shared/metrics';

export interface RateState {
  allowed: boolean;
  remaining: number;
  resetSeconds: number;
  retryAfterSeconds: number;
}

/**
 * Token buckets keyed by API key (or by client address for failed authentications): `burst`
 * tokens, refilled at `perSecond`. Per gateway instance; idle buckets are swept so memory stays bounded.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = Date.now();

  constructor(
    readonly perSecond: number,
    readonly burst: number,
    readonly policyName: string,
  ) {}

  /** Takes one token; `allowed` false means the caller must wait `retryAfterSeconds`. */
  take(key: string, now = Date.now()): RateState {
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    else rateLimitRefusals.inc({ limit: this.policyName });
    this.buckets.set(key, bucket);
    return this.stateOf(bucket.tokens, allowed);
  }

  /** The state a client is told, from the tokens left after a take. */
  stateOf(tokens: number, allowed: boolean): RateState {
    return {
      allowed,
      remaining: Math.floor(tokens),
      resetSeconds: Math.ceil((this.burst - tokens) / this.perSecond),
      retryAfterSeconds: allowed ? 0 : Math.ceil((1 - tokens) / this.perSecond),
    };
  }

  /** IETF httpapi-ratelimit-headers: `RateLimit-Policy` names the quota, `RateLimit` the state. */
  headers(state: { remaining: number; resetSeconds: number }): Record<string, string> {
    const window = Math.ceil(this.burst / this.perSecond);
    return {
      'RateLimit-Policy': `"${this.policyName}";q=${this.burst};w=${window}`,
      RateLimit: `"${this.policyName}";r=${state.remaining};t=${state.resetSeconds}`,
    };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    const fullAfterMs = (this.burst / this.perSecond) * 1000;
    for (const [key, bucket] of this.buckets) if (now - bucket.at > fullAfterMs) this.buckets.delete(key);
  }
}

/** The same token bucket, atomically in Redis, on Redis's clock so that instances' clocks do not matter. */
const TAKE_TOKEN = `
local perSecond = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + (now - at) / 1000 * perSecond)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / perSecond * 1000) + 1000)
return { allowed, tostring(tokens) }
`;

/**
 * The per-key limit shared by every gateway instance through Redis, so that N instances do not
 * grant N times the contract's rate. While Redis is unreachable each instance limits on its own.
 */
export class SharedRateLimiter {
  constructor(
    private readonly local: RateLimiter,
    private readonly redis: Redis | undefined,
    private readonly keyPrefix: string,
  ) {}

  async take(key: string): Promise<RateState> {
    if (!this.redis) return this.local.take(key);
    try {
      const [allowed, tokens] = (await this.redis.eval(
        TAKE_TOKEN,
        1,
        `${this.keyPrefix}ratelimit:${this.local.policyName}:${key}`,
        this.local.perSecond,
        this.local.burst,
      )) as [number, string];
      if (allowed !== 1) rateLimitRefusals.inc({ limit: this.local.policyName });
      return this.local.stateOf(Number(tokens), allowed === 1);
    } catch {
      return this.local.take(key);
    }
  }

  headers(state: { remaining: number; resetSeconds: number }): Record<string, string> {
    return this.local.headers(state);
  }
}
