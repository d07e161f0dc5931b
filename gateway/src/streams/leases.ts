import type { Redis } from 'ioredis';

/** How long a stream's place lasts without renewal: a crashed gateway's streams free their places after it. */
export const LEASE_MS = 15_000;
/** How often a gateway renews the places of its open streams: several renewals fit in a lease. */
export const RENEW_MS = 5_000;

// Every script reads Redis's clock, so that the gateways' clocks do not matter.
const NOW = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
`;

/** Counts the live places and takes one when fewer than ARGV[1] are; 1 when taken. */
const ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** Extends the given places (adding back any that Redis lost meanwhile, to an outage or a restart). */
const RENEW = `${NOW}
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 0
`;

/**
 * The places of a key's open streams, shared by every gateway through Redis: a sorted set per key
 * of lease ids scored by their expiry, which the gateway holding each stream renews. Every call
 * throws when Redis does not answer; the caller then counts on its own.
 */
export class StreamLeases {
  /** Places whose release Redis did not take: released again at each renewal. */
  private readonly unreleased = new Map<string, Set<string>>();

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {}

  /** Takes a place for `leaseId` unless the key holds `limit` live ones; true when taken. */
  async acquire(apiKeyId: string, leaseId: string, limit: number): Promise<boolean> {
    return (await this.redis.eval(ACQUIRE, 1, this.keyOf(apiKeyId), limit, LEASE_MS, leaseId)) === 1;
  }

  release(apiKeyId: string, leaseId: string): void {
    this.redis.zrem(this.keyOf(apiKeyId), leaseId).catch(() => this.releaseLater(apiKeyId, [leaseId]));
  }

  private releaseLater(apiKeyId: string, leaseIds: Iterable<string>): void {
    let set = this.unreleased.get(apiKeyId);
    if (!set) this.unreleased.set(apiKeyId, (set = new Set()));
    for (const leaseId of leaseIds) set.add(leaseId);
  }

  /**
   * Renews the places of this gateway's open streams, by key, and releases those not released
   * before. Sent in order on one connection after any earlier release, so a renewal never brings
   * back a place released since.
   */
  async renew(held: Map<string, string[]>): Promise<void> {
    const pipeline = this.redis.pipeline();
    const retried = [...this.unreleased];
    this.unreleased.clear();
    for (const [apiKeyId, leaseIds] of retried) pipeline.zrem(this.keyOf(apiKeyId), ...leaseIds);
    for (const [apiKeyId, leaseIds] of held) if (leaseIds.length > 0) pipeline.eval(RENEW, 1, this.keyOf(apiKeyId), LEASE_MS, ...leaseIds);
    const results = await pipeline.exec().catch(() => null);
    retried.forEach(([apiKeyId, leaseIds], index) => {
      if (!results || results[index]?.[0]) this.releaseLater(apiKeyId, leaseIds);
    });
    if (!results || results.some(([error]) => error)) throw new Error('the stream leases could not all be renewed');
  }

  private keyOf(apiKeyId: string): string {
    return `${this.keyPrefix}streams:${apiKeyId}`;
  }
}
