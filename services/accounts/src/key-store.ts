import type { Redis } from 'ioredis';
import { databaseUrlOf, databaseVariablesOf, type GatewaySettings } from '@ots/shared/config';
import { createDatabase } from '@ots/shared/db';
import type { Logger } from '@ots/shared/logger';
import { apiKeyLookups } from '@ots/shared/metrics';
import { createRedis } from '@ots/shared/redis';
import { SCHEMA } from '../migrations/index.ts';
import { canonicalAddress, hashesMatch, userAgentForLog, type KeyRecord } from './domain.ts';
import {
  findApiKeyForLog,
  findKeyRecordByHash,
  insertSecurityEvent,
  readKeyCacheGeneration,
  touchLastUsed,
  type AccountsDatabase,
  type AccountsDb,
} from './repository.ts';

export interface KeyStoreOptions {
  db: AccountsDb;
  /** Absent when REDIS_URL is unset: the in-process layer serves alone. */
  redis: Redis | undefined;
  redisKeyPrefix: string;
  log: Logger;
  /**
   * The in-process layer's lifetime. It bounds how long a revocation can go unseen by an instance
   * that missed every other signal, so it stays at the contract's 1 s.
   */
  localTtlMs?: number;
  /** Redis lifetime of a known key's record, and of an unknown key's negative entry. */
  redisTtlSeconds?: number;
  negativeTtlSeconds?: number;
  localMaxEntries?: number;
  /** How often the cache generation is read from Postgres. */
  generationPollMs?: number;
}

type Cached = { record: KeyRecord | null; until: number };
/** What Redis holds: the record, stamped with the cache generation it was read under. */
type Shared = { g: number; r: KeyRecord | null };

const LAST_USED_INTERVAL_MS = 60_000;
/** Contract section 5: a key refused for its address is logged at most once a minute per key and address. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;
const LAST_USED_FLUSH_MS = 5_000;

/**
 * API-key look-ups: an in-process layer (≤ 1 s), Redis (shared by gateway instances), then Postgres.
 *
 * Every revocation, expiry change or access change bumps a generation counter in Postgres in the
 * same transaction, then deletes the Redis entries and publishes the new generation, which every
 * instance applies at once. Each instance also polls the generation (twice a second) and trusts a
 * Redis entry only if it was stored under the current generation, so a change still takes effect
 * within the second when the publish is lost, when Redis was down during the change, or when another
 * instance raced to re-cache the old record. Redis failures fall through to Postgres, so a Redis
 * outage slows look-ups but refuses no one.
 */
export class ApiKeyStore {
  private readonly local = new Map<string, Cached>();
  private readonly inFlight = new Map<string, Promise<KeyRecord | null>>();
  private readonly lastTouched = new Map<string, number>();
  private readonly refusalsLogged = new Map<string, number>();
  private pendingTouches = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private subscriber: Redis | undefined;
  private generation: number | undefined;
  private closed = false;
  private readonly changeListeners = new Set<() => void>();
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

  /** The accounts database the keys are read from; the gateway keeps its idempotency answers there too. */
  get db(): AccountsDb {
    return this.options.db;
  }

  /** The Redis channel on which key changes are published to every gateway. */
  get channel(): string {
    return `${this.options.redisKeyPrefix}apikey:invalidate`;
  }

  private redisKey(hashHex: string): string {
    return `${this.options.redisKeyPrefix}apikey:${hashHex}`;
  }

  /** Adopts a newer generation: everything cached under an older one is no longer trusted. */
  private adoptGeneration(generation: number): void {
    if (this.generation === undefined || generation > this.generation) {
      const changed = this.generation !== undefined;
      if (changed) this.local.clear();
      this.generation = generation;
      if (changed) for (const listener of this.changeListeners) listener();
    }
  }

  /**
   * Calls `listener` whenever a change to keys or accounts is seen (published or polled), after the
   * in-process layer was cleared: what outlives a request (the gateway's event streams) checks its
   * key again then. Returns the function that stops the calls.
   */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  private async refreshGeneration(): Promise<void> {
    try {
      this.adoptGeneration(await readKeyCacheGeneration(this.options.db));
    } catch (error) {
      this.options.log.warn({ err: error }, 'reading the key cache generation failed');
    }
  }

  /** The record of the key with this hash, or null when no such key exists. */
  async lookup(keyHash: Buffer, now = Date.now()): Promise<KeyRecord | null> {
    const hex = keyHash.toString('hex');
    const cached = this.local.get(hex);
    if (cached && cached.until > now) {
      apiKeyLookups.inc({ layer: 'local' });
      return cached.record;
    }
    // Joins only a load begun under the current generation: one begun before a change may answer
    // with the record as it was, and a stream that checks its key again on the change would keep it.
    const flight = `${this.generation}\n${hex}`;
    const running = this.inFlight.get(flight);
    if (running) return running;
    const loading = this.load(keyHash, hex).finally(() => this.inFlight.delete(flight));
    this.inFlight.set(flight, loading);
    return loading;
  }

  /** What the caches (in-process, then Redis) know of the key, without reading Postgres; undefined when neither knows it. */
  async lookupCached(keyHash: Buffer, now = Date.now()): Promise<KeyRecord | null | undefined> {
    const hex = keyHash.toString('hex');
    const cached = this.local.get(hex);
    if (cached && cached.until > now) {
      apiKeyLookups.inc({ layer: 'local' });
      return cached.record;
    }
    const generation = this.generation;
    const shared = generation === undefined ? undefined : await this.readRedis(hex, generation);
    apiKeyLookups.inc({ layer: shared === undefined ? 'none' : 'redis' });
    // Kept in-process as `load` keeps what it reads, so that a live key costs one Redis read per
    // in-process lifetime, not one per request; not if the generation moved on during the read.
    if (shared !== undefined && generation === this.generation) this.remember(hex, shared);
    return shared;
  }

  private async load(keyHash: Buffer, hex: string): Promise<KeyRecord | null> {
    if (this.generation === undefined) await this.refreshGeneration();
    // Captured before reading Postgres: a change committed meanwhile bumps past it, so what is
    // cached below is ignored by every instance once they see the new generation.
    const generation = this.generation ?? 0;
    const fromRedis = await this.readRedis(hex, generation);
    let record: KeyRecord | null;
    if (fromRedis !== undefined) {
      apiKeyLookups.inc({ layer: 'redis' });
      record = fromRedis;
    } else {
      apiKeyLookups.inc({ layer: 'postgres' });
      const row = await findKeyRecordByHash(this.options.db, keyHash);
      // The index found the row by hash; the constant-time check keeps the comparison itself timing-safe.
      record = row && hashesMatch(row.keyHash, keyHash) ? withoutHash(row) : null;
      await this.writeRedis(hex, { g: generation, r: record });
    }
    if (record === null) this.unknownKeyLookups += 1;
    if (generation === this.generation) this.remember(hex, record);
    return record;
  }

  private remember(hex: string, record: KeyRecord | null): void {
    if (this.local.size >= this.localMaxEntries) {
      const oldest = this.local.keys().next().value;
      if (oldest !== undefined) this.local.delete(oldest);
    }
    this.local.set(hex, { record, until: Date.now() + this.localTtlMs });
  }

  private async readRedis(hex: string, generation: number): Promise<KeyRecord | null | undefined> {
    if (!this.options.redis) return undefined;
    try {
      const raw = await this.options.redis.get(this.redisKey(hex));
      if (raw === null) return undefined;
      const shared = JSON.parse(raw) as Shared;
      return shared.g === generation ? shared.r : undefined;
    } catch (error) {
      this.options.log.warn({ err: error }, 'key cache read failed; using Postgres');
      return undefined;
    }
  }

  private async writeRedis(hex: string, shared: Shared): Promise<void> {
    if (!this.options.redis) return;
    try {
      const ttl = shared.r ? this.redisTtlSeconds : this.negativeTtlSeconds;
      await this.options.redis.set(this.redisKey(hex), JSON.stringify(shared), 'EX', ttl);
    } catch (error) {
      this.options.log.warn({ err: error }, 'key cache write failed');
    }
  }

  /**
   * Called after a change to keys has been committed with `generation` (from bumpKeyCacheGeneration):
   * drops the shared entries and tells every instance. Returns false when Redis could not be told;
   * the instances' generation polling then carries the change within the second.
   */
  async invalidate(keyHashes: readonly Buffer[], generation: number): Promise<boolean> {
    const hexes = keyHashes.map((hash) => hash.toString('hex'));
    for (const hex of hexes) this.local.delete(hex);
    this.adoptGeneration(generation);
    const redis = this.options.redis;
    if (!redis) return true;
    try {
      if (hexes.length > 0) await redis.del(...hexes.map((hex) => this.redisKey(hex)));
      await redis.publish(this.channel, String(generation));
      return true;
    } catch (error) {
      this.options.log.warn({ err: error }, 'key cache invalidation could not reach Redis');
      return false;
    }
  }

  /** For gateways: follow the generation (published and polled) so that changes apply within the second. */
  async start(generationPollMs = this.options.generationPollMs ?? 500): Promise<void> {
    // Subscribed beside the first read, not after it: a slow database at start must not leave the
    // instance deaf to published changes, and Redis being down must not hold back the polling.
    await Promise.all([this.subscribe(), this.refreshGeneration().then(() => this.poll(generationPollMs))]);
  }

  private poll(intervalMs: number): void {
    if (this.closed) return;
    this.pollTimer = setTimeout(() => void this.refreshGeneration().finally(() => this.poll(intervalMs)), intervalMs).unref();
  }

  private async subscribe(): Promise<void> {
    if (!this.options.redis) return;
    // Waited for however long Redis takes (no command timeout, no retry limit): ioredis sends a
    // queued SUBSCRIBE once connected even after timing it out, so a timeout would only report a
    // failure that did not happen.
    this.subscriber = this.options.redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });
    this.subscriber.on('error', (error) => this.options.log.debug({ err: error }, 'key invalidation subscriber error'));
    this.subscriber.on('message', (_channel: string, message: string) => {
      const generation = Number(message);
      if (Number.isSafeInteger(generation)) this.adoptGeneration(generation);
    });
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

  /**
   * Writes a refusal of a live key used from outside its allowed addresses to the account's security
   * log, at most once a minute per key and address: checked in-process first, then claimed in Redis
   * so that several gateways write it once. A failure is logged and refuses no one.
   */
  async recordAddressRefusal(keyId: string, address: string, userAgent: string | undefined, now = Date.now()): Promise<void> {
    const clientAddress = canonicalAddress(address);
    const slot = `${keyId} ${clientAddress}`;
    const last = this.refusalsLogged.get(slot);
    if (last !== undefined && now - last < REFUSAL_LOG_INTERVAL_MS) return;
    if (this.refusalsLogged.size >= this.localMaxEntries) this.refusalsLogged.clear();
    this.refusalsLogged.set(slot, now);
    try {
      const redis = this.options.redis;
      if (redis) {
        const claimed = await redis.set(`${this.options.redisKeyPrefix}apikey:refusal:${slot}`, '1', 'PX', REFUSAL_LOG_INTERVAL_MS, 'NX');
        if (claimed === null) return;
      }
      const key = await findApiKeyForLog(this.options.db, keyId);
      if (!key) return;
      await insertSecurityEvent(this.options.db, {
        accountId: key.account_id,
        type: 'key.refused_address',
        occurredAt: new Date(now),
        actor: { ownerId: null, ownerEmail: null, clientAddress, userAgent: userAgentForLog(userAgent) },
        key: { id: key.id, displayPrefix: key.display_prefix },
      });
    } catch (error) {
      this.options.log.warn({ err: error }, 'logging a refused key address failed');
    }
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
    this.closed = true;
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
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
    scopes: row.scopes,
    allowedCidrs: row.allowedCidrs,
  };
}

export interface OpenedKeyStore {
  keyStore: ApiKeyStore;
  db: AccountsDb;
  redis: Redis | undefined;
  close(): Promise<void>;
}

/** The key store on its own connections, for the gateway and the admin CLI. */
export function openKeyStore(config: GatewaySettings, log: Logger, options: { listen: boolean }): OpenedKeyStore {
  const databaseUrl = databaseUrlOf(config, 'accounts');
  if (!databaseUrl) throw new Error(`${databaseVariablesOf('accounts')} is required`);
  const db = createDatabase<AccountsDatabase>({ url: databaseUrl, schema: SCHEMA, applicationName: 'api-key-store' });
  const redis = config.redisUrl ? createRedis(config.redisUrl, log) : undefined;
  const keyStore = new ApiKeyStore({ db, redis, redisKeyPrefix: config.redisKeyPrefix, log });
  if (options.listen) {
    keyStore.start().catch((error: unknown) => log.warn({ err: error }, 'following key invalidations failed'));
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
