import type { KeyRecord, ApiKeyStore } from '@ots/accounts';

/**
 * Contract section 5: failed authentications are limited per client address, yet a valid, live key
 * is never refused because other requests from its address failed, since clients behind one proxy
 * or NAT share an address. So every well-formed key is looked up, whatever its address did before,
 * and only a key that turns out not to be valid counts against the address (401, then 429).
 *
 * What a guesser costs stays bounded without refusing anyone: the checksum turns away made-up keys
 * before any look-up; the negative cache answers a repeated guess without Postgres; and the look-ups
 * that miss the caches wait for one of a fixed number of slots, handed out in turn between client
 * addresses. A flood from one address therefore holds at most that many Postgres connections, and
 * makes only its own address wait; a valid key from another address waits at most one round.
 */
export class KeyLookupSlots {
  private busy = 0;
  /** Waiters per client address; Map order is the round-robin order of addresses. */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(readonly capacity: number) {}

  /** Resolves true once a slot is held (to be given back with `release`), false if `abandoned` fires first. */
  acquire(address: string, abandoned: AbortSignal): Promise<boolean> {
    if (this.busy < this.capacity && this.waiting.size === 0) {
      this.busy += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const queue = this.waiting.get(address) ?? [];
      const grant = () => {
        abandoned.removeEventListener('abort', leave);
        resolve(true);
      };
      const leave = () => {
        const index = queue.indexOf(grant);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0 && this.waiting.get(address) === queue) this.waiting.delete(address);
        resolve(false);
      };
      queue.push(grant);
      this.waiting.set(address, queue);
      abandoned.addEventListener('abort', leave, { once: true });
    });
  }

  /** Hands the slot to the next address in turn, which goes to the back of the round. */
  release(): void {
    const next = this.waiting.entries().next();
    if (next.done) {
      this.busy -= 1;
      return;
    }
    const [address, queue] = next.value;
    const grant = queue.shift()!;
    this.waiting.delete(address);
    if (queue.length > 0) this.waiting.set(address, queue);
    grant();
  }
}

/** The gateway's key look-up: the caches first, at no cost to anyone; Postgres only through a slot. */
export class KeyLookups {
  private readonly slots: KeyLookupSlots;

  constructor(
    private readonly keyStore: ApiKeyStore,
    concurrency: number,
  ) {
    this.slots = new KeyLookupSlots(concurrency);
  }

  /**
   * The key's record, null for no such key; undefined when the request timed out or its client left
   * while it waited for a slot (the reply is then sent, or the socket gone).
   */
  async lookup(keyHash: Buffer, address: string, connection: NodeJS.EventEmitter): Promise<KeyRecord | null | undefined> {
    const cached = await this.keyStore.lookupCached(keyHash);
    if (cached !== undefined) return cached;
    const abandoned = new AbortController();
    const abandon = () => abandoned.abort();
    connection.once('close', abandon);
    try {
      if (!(await this.slots.acquire(address, abandoned.signal))) return undefined;
      try {
        return await this.keyStore.lookup(keyHash);
      } finally {
        this.slots.release();
      }
    } finally {
      connection.off('close', abandon);
    }
  }
}
