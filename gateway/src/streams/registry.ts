import type { AuthorisedKey } from '../authentication.ts';
import type { EndReason, EventStream } from './event-stream.ts';

/** The key a stream was opened with: enough to check it again, and when it expires. */
export type StreamKey = AuthorisedKey;

/** Section 5's verdict on a key now, as `Authentication.keyStatus` gives it. */
export type KeyStatus = 'authenticated' | 'invalid' | 'access-disabled' | 'read-revoked';

interface OpenStream {
  stream: EventStream;
  key: StreamKey;
  expiry: NodeJS.Timeout | undefined;
}

/** setTimeout's longest delay; a later expiry is armed again when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The open streams of this gateway process, by key: at most `perKey` each; each ended within the
 * second when its key is revoked, expires or loses the `read` scope or its allowed address, or its
 * account's API access is disabled (checked again
 * whenever the key cache sees a change, which it does within half a second of any, and at the key's
 * expiry); all ended on shutdown.
 */
export class StreamRegistry {
  private readonly byKey = new Map<string, Set<OpenStream>>();
  private checking: Promise<void> | undefined;
  private recheck = false;

  constructor(
    private readonly perKey: number,
    private readonly keyStatus: (key: StreamKey) => Promise<KeyStatus>,
  ) {}

  /** Registers the stream; false when its key already holds `perKey` open streams. */
  open(stream: EventStream, key: StreamKey): boolean {
    let set = this.byKey.get(key.apiKeyId);
    if (set && set.size >= this.perKey) return false;
    if (!set) this.byKey.set(key.apiKeyId, (set = new Set()));
    const entry: OpenStream = { stream, key, expiry: undefined };
    this.armExpiry(entry);
    set.add(entry);
    return true;
  }

  /** Whether another stream of this key would be refused. */
  full(apiKeyId: string): boolean {
    return (this.byKey.get(apiKeyId)?.size ?? 0) >= this.perKey;
  }

  close(stream: EventStream, apiKeyId: string): void {
    const set = this.byKey.get(apiKeyId);
    if (!set) return;
    for (const entry of set) {
      if (entry.stream !== stream) continue;
      clearTimeout(entry.expiry);
      set.delete(entry);
    }
    if (set.size === 0) this.byKey.delete(apiKeyId);
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
    await Promise.all(
      [...this.byKey.values()].map(async (set) => {
        const [first] = set;
        if (!first) return;
        let status: KeyStatus;
        try {
          status = await this.keyStatus(first.key);
        } catch {
          // The key store could not answer: the next change, or the generation poll, checks again.
          return;
        }
        if (status === 'authenticated') return;
        const reason: EndReason = status === 'invalid' ? 'key-invalid' : status;
        for (const entry of set) entry.stream.end(reason);
      }),
    );
  }

  /** Ends every stream (shutdown); each transport closes its connection so that clients reconnect elsewhere. */
  endAll(reason: EndReason): void {
    for (const set of this.byKey.values()) for (const entry of set) entry.stream.end(reason);
  }

  async drained(): Promise<void> {
    await this.checking;
  }
}
