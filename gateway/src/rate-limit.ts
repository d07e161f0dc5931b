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

  /** Sets a key's bucket: a fallback bucket follows the shared bucket's last known state this way. */
  seed(key: string, tokens: number, now = Date.now()): void {
    // Seeded on every answer from Redis, so swept here too: `take` runs only while Redis is away.
    this.sweep(now);
    this.buckets.set(key, { tokens: Math.min(this.burst, tokens), at: now });
  }

  /** The tokens a key's bucket holds now, refilled; undefined when it has none (never used, or swept once full). */
  tokensOf(key: string, now = Date.now()): number | undefined {
    const bucket = this.buckets.get(key);
    return bucket && Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
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

/**
 * The same token bucket, atomically in Redis, on Redis's clock so that instances' clocks do not matter.
 * ARGV[3], when given, caps the bucket: what the instances drew on their own while Redis was away.
 */
const TAKE_TOKEN = `
local perSecond = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + (now - at) / 1000 * perSecond)
if ARGV[3] then
  tokens = math.min(tokens, tonumber(ARGV[3]))
end
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
 * grant N times the contract's rate. While Redis is unreachable each instance limits on its own
 * with a fallback bucket of 1/`replicas` of the rate and burst, so the instances together still
 * grant the limit, not `replicas` times it. The fallback bucket follows the shared one's last known
 * state (an outage hands out no fresh burst), and what was drawn from it caps the shared bucket when
 * Redis answers again (nor does the recovery, should the shared bucket have expired meanwhile).
 * Without Redis at all (a single instance) the whole limit is this instance's.
 */
export class SharedRateLimiter {
  private readonly fallback: RateLimiter;
  /** Keys whose fallback bucket was drawn on since Redis last answered for them. */
  private readonly drawnLocally = new Set<string>();

  constructor(
    private readonly local: RateLimiter,
    private readonly redis: Redis | undefined,
    private readonly keyPrefix: string,
    private readonly replicas = 1,
  ) {
    this.fallback = new RateLimiter(local.perSecond / replicas, local.burst / replicas, local.policyName);
  }

  async take(key: string): Promise<RateState> {
    if (!this.redis) return this.local.take(key);
    const drawn = this.drawnLocally.has(key) ? this.fallback.tokensOf(key) : undefined;
    try {
      const [allowed, tokens] = (await this.redis.eval(
        TAKE_TOKEN,
        1,
        `${this.keyPrefix}ratelimit:${this.local.policyName}:${key}`,
        this.local.perSecond,
        this.local.burst,
        ...(drawn === undefined ? [] : [drawn * this.replicas]),
      )) as [number, string];
      this.drawnLocally.delete(key);
      this.fallback.seed(key, Number(tokens) / this.replicas);
      if (allowed !== 1) rateLimitRefusals.inc({ limit: this.local.policyName });
      return this.local.stateOf(Number(tokens), allowed === 1);
    } catch {
      this.drawnLocally.add(key);
      return this.fallback.take(key);
    }
  }

  headers(state: { remaining: number; resetSeconds: number }): Record<string, string> {
    return this.local.headers(state);
  }
}
