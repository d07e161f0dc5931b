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
  take(key: string, now = Date.now()): { allowed: boolean; remaining: number; resetSeconds: number; retryAfterSeconds: number } {
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    const remaining = Math.floor(bucket.tokens);
    return {
      allowed,
      remaining,
      resetSeconds: Math.ceil((this.burst - bucket.tokens) / this.perSecond),
      retryAfterSeconds: allowed ? 0 : Math.ceil((1 - bucket.tokens) / this.perSecond),
    };
  }

  /** Only looks: used to refuse an address that has already failed too often, before any look-up. */
  isExhausted(key: string, now = Date.now()): boolean {
    const bucket = this.buckets.get(key);
    if (!bucket) return false;
    return Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond) < 1;
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
