import type { Redis } from 'ioredis';
import type { Config } from '@ots/shared/config';
import { createDatabase } from '@ots/shared/db';
import type { Logger } from '@ots/shared/logger';
import { createRedis } from '@ots/shared/redis';
import { SCHEMA } from '../migrations/index.ts';
import { hashesMatch, type KeyRecord } from './domain.ts';
import { findKeyRecordByHash, touchLastUsed, type AccountsDatabase, type AccountsDb } from './repository.ts';

export interface KeyStoreOptions {
  db: AccountsDb;
  /** Absent when REDIS_URL is unset: the in-process layer serves alone. */
  redis: Redis | undefined;
  redisKeyPrefix: string;
  log: Logger;
  /**
   * The in-process layer's lifetime. It bounds how long a revocation can go unseen by an instance
   * that missed the invalidation message, so it stays at the contract's 1 s.
   */
  localTtlMs?: number;
  /** Redis lifetime of a known key's record, and of an unknown key's negative entry. */
  redisTtlSeconds?: number;
  negativeTtlSeconds?: number;
  localMaxEntries?: number;
}

type Cached = { record: KeyRecord | null; until: number };

const LAST_USED_INTERVAL_MS = 60_000;
const LAST_USED_FLUSH_MS = 5_000;

/**
 * API-key look-ups: an in-process layer (≤ 1 s), Redis (shared by gateway instances), then Postgres.
 * Revocation, expiry and disabling drop the Redis entry and publish an invalidation that every
 * instance applies to its local layer; the short local TTL bounds the damage of a lost message.
 * Redis failures fall through to Postgres, so a Redis outage slows look-ups but refuses no one.
 */
export class ApiKeyStore {
  private readonly local = new Map<string, Cached>();
  private readonly inFlight = new Map<string, Promise<KeyRecord | null>>();
  private readonly lastTouched = new Map<string, number>();
  private pendingTouches = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private subscriber: Redis | undefined;
  private readonly localTtlMs: number;
  private readonly redisTtlSeconds: number;
  private readonly negativeTtlSeconds: number;
  private readonly localMaxEntries: number;
  /** Unknown keys that passed the checksum: counted for monitoring of key guessing. */
  unknownKeyLookups = 0;

  constructor(private readonly options: KeyStoreOptions) {
    this.localTtlMs = options.localTtlMs ?? 1_000;
    this.redisTtlSeconds = options.redisTtlSeconds ?? 30;
    this.negativeTtlSeconds = options.negativeTtlSeconds ?? 30;
    this.localMaxEntries = options.localMaxEntries ?? 50_000;
  }

  private get channel(): string {
    return `${this.options.redisKeyPrefix}apikey:invalidate`;
  }

  private redisKey(hashHex: string): string {
    return `${this.options.redisKeyPrefix}apikey:${hashHex}`;
  }

  /** The record of the key with this hash, or null when no such key exists. */
  async lookup(keyHash: Buffer, now = Date.now()): Promise<KeyRecord | null> {
    const hex = keyHash.toString('hex');
    const cached = this.local.get(hex);
    if (cached && cached.until > now) return cached.record;
    const running = this.inFlight.get(hex);
    if (running) return running;
    const loading = this.load(keyHash, hex).finally(() => this.inFlight.delete(hex));
    this.inFlight.set(hex, loading);
    return loading;
  }

  private async load(keyHash: Buffer, hex: string): Promise<KeyRecord | null> {
    const fromRedis = await this.readRedis(hex);
    let record: KeyRecord | null;
    if (fromRedis !== undefined) {
      record = fromRedis;
    } else {
      const row = await findKeyRecordByHash(this.options.db, keyHash);
      // The index found the row by hash; the constant-time check keeps the comparison itself timing-safe.
      record = row && hashesMatch(row.keyHash, keyHash) ? withoutHash(row) : null;
      await this.writeRedis(hex, record);
    }
    if (record === null) this.unknownKeyLookups += 1;
    this.remember(hex, record);
    return record;
  }

  private remember(hex: string, record: KeyRecord | null): void {
    if (this.local.size >= this.localMaxEntries) {
      const oldest = this.local.keys().next().value;
      if (oldest !== undefined) this.local.delete(oldest);
    }
    this.local.set(hex, { record, until: Date.now() + this.localTtlMs });
  }

  private async readRedis(hex: string): Promise<KeyRecord | null | undefined> {
    if (!this.options.redis) return undefined;
    try {
      const raw = await this.options.redis.get(this.redisKey(hex));
      if (raw === null) return undefined;
      return JSON.parse(raw) as KeyRecord | null;
    } catch (error) {
      this.options.log.warn({ err: error }, 'key cache read failed; using Postgres');
      return undefined;
    }
  }

  private async writeRedis(hex: string, record: KeyRecord | null): Promise<void> {
    if (!this.options.redis) return;
    try {
      const ttl = record ? this.redisTtlSeconds : this.negativeTtlSeconds;
      await this.options.redis.set(this.redisKey(hex), JSON.stringify(record), 'EX', ttl);
    } catch (error) {
      this.options.log.warn({ err: error }, 'key cache write failed');
    }
  }

  /**
   * Called after a revocation, expiry change or access change has been committed to Postgres: drops
   * the shared entries and tells every instance to drop its local ones. Returns false when Redis
   * could not be told, in which case the Redis TTL bounds how long a stale entry may be served.
   */
  async invalidate(keyHashes: readonly Buffer[]): Promise<boolean> {
    const hexes = keyHashes.map((hash) => hash.toString('hex'));
    for (const hex of hexes) this.local.delete(hex);
    const redis = this.options.redis;
    if (!redis || hexes.length === 0) return true;
    try {
      await redis.del(...hexes.map((hex) => this.redisKey(hex)));
      await redis.publish(this.channel, hexes.join(','));
      return true;
    } catch (error) {
      this.options.log.warn({ err: error }, 'key cache invalidation failed');
      return false;
    }
  }

  /** Applies invalidations published by any instance (or the admin CLI) to this instance's local layer. */
  async listenForInvalidations(): Promise<void> {
    if (!this.options.redis) return;
    this.subscriber = this.options.redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.subscriber.on('error', (error) => this.options.log.debug({ err: error }, 'key invalidation subscriber error'));
    this.subscriber.on('message', (_channel: string, message: string) => {
      for (const hex of message.split(',')) this.local.delete(hex);
    });
    // After a reconnect, messages sent while disconnected are lost: clear the local layer then.
    this.subscriber.on('ready', () => this.local.clear());
    await this.subscriber.subscribe(this.channel);
  }

  /** Records a use for `lastUsedAt`: at most once a minute per key, flushed in batches off the request path. */
  recordUse(keyId: string, now = Date.now()): void {
    const last = this.lastTouched.get(keyId);
    if (last !== undefined && now - last < LAST_USED_INTERVAL_MS) return;
    this.lastTouched.set(keyId, now);
    this.pendingTouches.add(keyId);
    this.flushTimer ??= setTimeout(() => void this.flushUses(), LAST_USED_FLUSH_MS).unref();
  }

  async flushUses(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const keyIds = [...this.pendingTouches];
    this.pendingTouches = new Set();
    try {
      await touchLastUsed(this.options.db, keyIds);
    } catch (error) {
      this.options.log.warn({ err: error }, 'recording key use failed');
    }
    if (this.lastTouched.size > this.localMaxEntries) this.lastTouched.clear();
  }

  async close(): Promise<void> {
    await this.flushUses();
    this.subscriber?.disconnect();
  }
}

function withoutHash(row: KeyRecord & { keyHash: Buffer }): KeyRecord {
  return {
    keyId: row.keyId,
    accountId: row.accountId,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    apiAccessEnabled: row.apiAccessEnabled,
  };
}

export interface OpenedKeyStore {
  keyStore: ApiKeyStore;
  db: AccountsDb;
  redis: Redis | undefined;
  close(): Promise<void>;
}

/** The key store on its own connections, for the gateway and the admin CLI. */
export function openKeyStore(config: Config, log: Logger, options: { listen: boolean }): OpenedKeyStore {
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  const db = createDatabase<AccountsDatabase>({ url: config.databaseUrl, schema: SCHEMA, applicationName: 'api-key-store' });
  const redis = config.redisUrl ? createRedis(config.redisUrl, log) : undefined;
  const keyStore = new ApiKeyStore({ db, redis, redisKeyPrefix: config.redisKeyPrefix, log });
  if (options.listen) {
    keyStore.listenForInvalidations().catch((error: unknown) => log.warn({ err: error }, 'key invalidation subscription failed'));
  }
  return {
    keyStore,
    db,
    redis,
    close: async () => {
      await keyStore.close();
      redis?.disconnect();
      await db.destroy();
    },
  };
}
