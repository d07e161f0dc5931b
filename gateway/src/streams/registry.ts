import { randomUUID } from 'node:crypto';
import type { Logger } from '@ots/shared/logger';
import type { AuthorisedKey, KeyStatus } from '../authentication.ts';
import type { EndReason, EventStream } from './event-stream.ts';
import { RENEW_MS, type StreamLeases } from './leases.ts';

/** The key a stream was opened with: enough to check it again, and when it expires. */
export type StreamKey = AuthorisedKey;

/** A place among a key's streams, taken before its stream starts, so that a refusal can still be an HTTP 429. */
export interface StreamPlace {
  readonly apiKeyId: string;
  readonly leaseId: string;
}

interface OpenStream {
  stream: EventStream;
  /** As last checked: a roll moves the key's expiry to the end of its grace. */
  key: StreamKey;
  /** Its place among the key's streams of every gateway. */
  leaseId: string;
  expiry: NodeJS.Timeout | undefined;
}

/** setTimeout's longest delay; a later expiry is armed again when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A check the key store could not answer is tried again this soon: a revoked key's streams end within the second. */
export const KEY_CHECK_RETRY_MS = 250;

/**
 * The open streams of this gateway process, by key: at most `perKey` each, counted with every
 * other gateway's through `leases` (Redis) when given, and by this process alone without them or
 * while Redis does not answer (an outage never refuses every stream); each ended within the
 * second when its key is revoked, expires or loses the `read` scope or its allowed address, or its
 * account's API access is disabled (checked again
 * once it is registered, whenever the key cache sees a change, which it does within half a second of
 * any, and at the key's expiry as last seen); all ended on shutdown.
 */
export class StreamRegistry {
  private readonly byKey = new Map<string, Set<OpenStream>>();
  /** Places taken for streams still opening, by key: counted and renewed as the open ones are. */
  private readonly reserved = new Map<string, Set<string>>();
  private checking: Promise<void> | undefined;
  private recheck = false;
  private stopped = false;
  private readonly renewal: NodeJS.Timeout | undefined;
  /** Whether the last call to Redis failed: the change either way is logged once. */
  private sharedCountDown = false;

  constructor(
    private readonly perKey: number,
    private readonly keyStatus: (key: StreamKey) => Promise<KeyStatus>,
    private readonly leases?: StreamLeases,
    private readonly logger?: Logger,
  ) {
    if (!leases) return;
    this.renewal = setInterval(() => this.renew(), RENEW_MS);
    this.renewal.unref();
  }

  /** Takes a place for a stream of this key; undefined when it already holds `perKey`. */
  async reserve(apiKeyId: string): Promise<StreamPlace | undefined> {
    const place = { apiKeyId, leaseId: randomUUID() };
    // Counted and taken in one step, with no await between: two streams cannot both take the last place.
    const takeHere = () => {
      if (this.localCount(apiKeyId) >= this.perKey) return false;
      this.hold(place);
      return true;
    };
    if (!this.leases) return takeHere() ? place : undefined;
    try {
      const taken = await this.leases.acquire(apiKeyId, place.leaseId, this.perKey);
      this.sharedCountUp();
      if (!taken) return undefined;
      this.hold(place);
      return place;
    } catch (error) {
      this.sharedCountFailed(error);
      if (takeHere()) return place;
      // Redis may have taken the place before failing to answer.
      this.leases.release(apiKeyId, place.leaseId);
      return undefined;
    }
  }

  private hold(place: StreamPlace): void {
    let set = this.reserved.get(place.apiKeyId);
    if (!set) this.reserved.set(place.apiKeyId, (set = new Set()));
    set.add(place.leaseId);
  }

  /** Gives back a place whose stream did not open; one that did is given back when its stream closes. */
  release(place: StreamPlace): void {
    if (!this.unhold(place)) return;
    this.leases?.release(place.apiKeyId, place.leaseId);
  }

  private unhold(place: StreamPlace): boolean {
    const set = this.reserved.get(place.apiKeyId);
    if (!set?.delete(place.leaseId)) return false;
    if (set.size === 0) this.reserved.delete(place.apiKeyId);
    return true;
  }

  /** Registers the stream in the place taken for it (or one taken now); false when its key already holds `perKey` open streams. */
  async open(stream: EventStream, key: StreamKey, reservedPlace?: StreamPlace): Promise<boolean> {
    const place = reservedPlace ?? (await this.reserve(key.apiKeyId));
    // Refused, or given back meanwhile (the client left while its stream was opening).
    if (!place || !this.unhold(place)) return false;
    let set = this.byKey.get(key.apiKeyId);
    if (!set) this.byKey.set(key.apiKeyId, (set = new Set()));
    const entry: OpenStream = { stream, key, leaseId: place.leaseId, expiry: undefined };
    this.armExpiry(entry);
    set.add(entry);
    // Admitted while the gateway was stopping: it ends with the others.
    if (this.stopped) stream.end('shutdown');
    // A change seen between the transport's look at the key and this registration found no stream to end: look once more.
    else await this.check([entry]);
    return true;
  }

  close(stream: EventStream, apiKeyId: string): void {
    const set = this.byKey.get(apiKeyId);
    if (!set) return;
    for (const entry of set) {
      if (entry.stream !== stream) continue;
      clearTimeout(entry.expiry);
      set.delete(entry);
      this.leases?.release(apiKeyId, entry.leaseId);
    }
    if (set.size === 0) this.byKey.delete(apiKeyId);
  }

  private localCount(apiKeyId: string): number {
    return (this.byKey.get(apiKeyId)?.size ?? 0) + (this.reserved.get(apiKeyId)?.size ?? 0);
  }

  private renew(): void {
    const held = new Map<string, string[]>();
    for (const [apiKeyId, set] of this.byKey) held.set(apiKeyId, [...set].map((entry) => entry.leaseId));
    for (const [apiKeyId, leaseIds] of this.reserved) held.set(apiKeyId, [...(held.get(apiKeyId) ?? []), ...leaseIds]);
    void this.leases?.renew(held).then(
      () => this.sharedCountUp(),
      (error: unknown) => this.sharedCountFailed(error),
    );
  }

  private sharedCountFailed(error: unknown): void {
    if (this.sharedCountDown) return;
    this.sharedCountDown = true;
    this.logger?.warn({ err: error }, "Redis does not answer: each key's open streams are counted on this gateway alone until it does");
  }

  private sharedCountUp(): void {
    if (!this.sharedCountDown) return;
    this.sharedCountDown = false;
    this.logger?.info("Redis answers again: each key's open streams are counted across the gateways");
  }

  get size(): number {
    let count = 0;
    for (const set of this.byKey.values()) count += set.size;
    return count;
  }

  private armExpiry(entry: OpenStream): void {
    if (entry.key.expiresAt === null) return;
    const wait = Math.max(0, entry.key.expiresAt - Date.now());
    entry.expiry = setTimeout(() => (wait > MAX_TIMER_MS ? this.armExpiry(entry) : entry.stream.end('key-invalid')), Math.min(wait, MAX_TIMER_MS));
    entry.expiry.unref();
  }

  /** A change to keys or accounts was seen: every key with open streams is checked again, once per key. */
  keysChanged(): void {
    if (this.checking) {
      this.recheck = true;
      return;
    }
    this.checking = this.checkKeys().finally(() => {
      this.checking = undefined;
      if (this.recheck) {
        this.recheck = false;
        this.keysChanged();
      }
    });
  }

  private async checkKeys(): Promise<void> {
    await Promise.all([...this.byKey.values()].map((set) => this.check([...set])));
  }

  /** Ends the streams (of one key) whose key may no longer read, and follows the expiry of the others; once per client address, which the key may have stopped allowing. */
  private async check(entries: OpenStream[]): Promise<void> {
    const byAddress = new Map<string, OpenStream[]>();
    for (const entry of entries) {
      const sameAddress = byAddress.get(entry.key.address);
      if (sameAddress) sameAddress.push(entry);
      else byAddress.set(entry.key.address, [entry]);
    }
    await Promise.all(
      [...byAddress.values()].map(async (sameAddress) => {
        let status: KeyStatus;
        try {
          status = await this.keyStatus(sameAddress[0]!.key);
        } catch {
          // The key store could not answer (a database blip): the change that asked may be the last
          // one for a long while, so the check is tried again until it answers.
          this.checkLater(sameAddress);
          return;
        }
        if (status.kind === 'authenticated' && status.caller.scopes.includes('read')) {
          for (const entry of sameAddress) this.expireAt(entry, status.expiresAt);
          return;
        }
        const reason: EndReason = status.kind === 'invalid' ? 'key-invalid' : status.kind === 'access-disabled' ? 'access-disabled' : 'read-revoked';
        for (const entry of sameAddress) entry.stream.end(reason);
      }),
    );
  }

  private checkLater(entries: OpenStream[]): void {
    const retry = setTimeout(() => {
      const open = entries.filter((entry) => !entry.stream.ended);
      if (open.length > 0 && !this.stopped) void this.check(open);
    }, KEY_CHECK_RETRY_MS);
    retry.unref();
  }

  private expireAt(entry: OpenStream, expiresAt: number | null): void {
    if (entry.key.expiresAt === expiresAt || entry.stream.ended) return;
    entry.key = { ...entry.key, expiresAt };
    clearTimeout(entry.expiry);
    this.armExpiry(entry);
  }

  /** Ends every stream (shutdown); each transport closes its connection so that clients reconnect elsewhere. */
  endAll(reason: EndReason): void {
    this.stopped = true;
    clearInterval(this.renewal);
    for (const set of this.byKey.values()) for (const entry of set) entry.stream.end(reason);
  }

  async drained(): Promise<void> {
    await this.checking;
  }
}
