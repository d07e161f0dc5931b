import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { FeedPosition } from './commit-order.ts';
import type { Uuid } from './ids.ts';
import { foreignCursor } from './pagination.ts';

/**
 * Cursors of commit-ordered feeds (commit-order.ts) are opaque (contract section 4): a feed position
 * holds a server-wide transaction id, which in the clear would tell a client how busy every other
 * account is. The position is sealed with AES-256-GCM under a key derived from a secret every
 * replica of the service already holds, with the feed's name and the account id as associated
 * data: a cursor is refused by any other feed and any other account, and an edited one by everyone.
 * 24 bytes of position (xid8 and uuid) make a 70-character cursor.
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const POSITION_BYTES = 24;

/** A feed's cursors for one account: what a use case is handed, so it cannot mix accounts up. */
export interface AccountFeedCursors {
  encode(position: FeedPosition): string;
  /** The position a cursor names; undefined when there is none. A cursor this account was not given is a BAD_USER_INPUT. */
  decode(cursor: string | null | undefined): FeedPosition | undefined;
}

export interface SealedFeedCursorsOptions {
  /** Bound into every cursor: a cursor of another feed does not open. */
  feed: string;
  /** HKDF's info for this feed's key; changing it refuses every cursor handed out before. */
  keyInfo: string;
}

export class SealedFeedCursors {
  private readonly key: Buffer;
  private readonly feed: string;

  constructor(secret: Buffer, options: SealedFeedCursorsOptions) {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), options.keyInfo, 32));
    this.feed = options.feed;
  }

  forAccount(accountId: string): AccountFeedCursors {
    return { encode: (position) => this.encode(accountId, position), decode: (cursor) => this.decode(accountId, cursor) };
  }

  encode(accountId: string, position: FeedPosition): string {
    const plain = Buffer.alloc(POSITION_BYTES);
    plain.writeBigUInt64BE(BigInt(position.xid), 0);
    Buffer.from(position.id.replaceAll('-', ''), 'hex').copy(plain, 8);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(this.associatedData(accountId));
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  decode(accountId: string, cursor: string | null | undefined): FeedPosition | undefined {
    if (cursor === null || cursor === undefined) return undefined;
    const bytes = Buffer.from(cursor, 'base64url');
    if (bytes.length !== IV_BYTES + POSITION_BYTES + TAG_BYTES || bytes.toString('base64url') !== cursor) foreignCursor();
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(this.associatedData(accountId));
      decipher.setAuthTag(bytes.subarray(IV_BYTES + POSITION_BYTES));
      plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, IV_BYTES + POSITION_BYTES)), decipher.final()]);
    } catch {
      foreignCursor();
    }
    const hex = plain.subarray(8).toString('hex');
    const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}` as Uuid;
    return { xid: plain.readBigUInt64BE(0).toString(), id };
  }

  private associatedData(accountId: string): Buffer {
    return Buffer.from(`${this.feed}:${accountId}`, 'utf8');
  }
}

/**
 * A feed's cursors for each running service, made when it first asks: the key is derived once per
 * service (from the secret its configuration holds), not per request.
 */
export function sealedCursorsPerRuntime<Runtime extends object>(
  secretOf: (runtime: Runtime) => Buffer,
  options: SealedFeedCursorsOptions,
): (runtime: Runtime) => SealedFeedCursors {
  const made = new WeakMap<Runtime, SealedFeedCursors>();
  return (runtime) => {
    let cursors = made.get(runtime);
    if (!cursors) made.set(runtime, (cursors = new SealedFeedCursors(secretOf(runtime), options)));
    return cursors;
  };
}
