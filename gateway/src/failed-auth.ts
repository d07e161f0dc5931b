import { failedAuthClientOf, type KeyRecord, type ApiKeyStore } from '@ots/accounts';

/**
 * Contract section 5: failed authentications are limited per client address, yet a valid, live key
 * is never refused because other requests from its address failed, since clients behind one proxy
 * or NAT share an address. So every well-formed key is looked up, whatever its address did before,
 * and only a key that turns out not to be valid counts against the address (401, then 429).
 *
 * What a guesser costs stays bounded without refusing anyone: the checksum turns away made-up keys
 * before any look-up; the negative cache answers a repeated guess without Postgres; and the look-ups
 * that miss the caches wait for one of a fixed number of slots, handed out in turn between clients
 * (an IPv4 address or an IPv6 /64, `failedAuthClientOf`, since one IPv6 client holds a whole /64),
 * and within a /64 in turn between its addresses. A flood from one client, from however many of its
 * addresses, therefore holds at most that many Postgres connections and makes only its own client
 * wait; a valid key from another client waits at most one round, and one from a neighbour in the
 * flooding /64 one round of that /64's addresses.
 */
export class KeyLookupSlots {
  private busy = 0;
  /** Waiters per client, then per address; Map order is the round-robin order at both levels. */
  private readonly waiting = new Map<string, Map<string, (() => void)[]>>();

  constructor(readonly capacity: number) {}

  /** Resolves true once a slot is held (to be given back with `release`), false if `abandoned` fires first. */
  acquire(address: string, abandoned: AbortSignal): Promise<boolean> {
    if (this.busy < this.capacity && this.waiting.size === 0) {
      this.busy += 1;
      return Promise.resolve(true);
    }
    const client = failedAuthClientOf(address);
    return new Promise((resolve) => {
      const addresses = this.waiting.get(client) ?? new Map<string, (() => void)[]>();
      const queue = addresses.get(address) ?? [];
      const grant = () => {
        abandoned.removeEventListener('abort', leave);
        resolve(true);
      };
      const leave = () => {
        const index = queue.indexOf(grant);
        if (index >= 0) queue.splice(index, 1);
        if (queue.length === 0 && addresses.get(address) === queue) addresses.delete(address);
        if (addresses.size === 0 && this.waiting.get(client) === addresses) this.waiting.delete(client);
        resolve(false);
      };
      queue.push(grant);
      addresses.set(address, queue);
      this.waiting.set(client, addresses);
      abandoned.addEventListener('abort', leave, { once: true });
    });
  }

  /** Hands the slot to the next client in turn, and within it the next address; both go to the back of their round. */
  release(): void {
    const next = this.waiting.entries().next();
    if (next.done) {
      this.busy -= 1;
      return;
    }
    const [client, addresses] = next.value;
    const [address, queue] = addresses.entries().next().value!;
    const grant = queue.shift()!;
    addresses.delete(address);
    if (queue.length > 0) addresses.set(address, queue);
    this.waiting.delete(client);
    if (addresses.size > 0) this.waiting.set(client, addresses);
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
