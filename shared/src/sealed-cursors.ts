import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { isFeedEnd, type FeedPosition } from './commit-order.ts';
import type { Uuid } from './ids.ts';
import { decodeKeysetCursor, foreignCursor, keysetPosition, type CursorTag, type KeysetPosition } from './pagination.ts';

/**
 * Every cursor is opaque (contract section 4): a client can read nothing from one. A position (a
 * 64-bit number and a row id: a commit-ordered feed's transaction id, or a newest-first list's time)
 * is sealed with AES-256-GCM under a key derived from a secret every replica of the service already
 * holds, with the list's name and the account id as associated data: a cursor is refused by any
 * other list and any other account, and an edited one by everyone. A feed's transaction id is the
 * whole server's, so in the clear it would tell a client how busy every other account is. 24 bytes
 * of position make a 70-character cursor.
 *
 * A row's position always seals to the same cursor: the IV is an HMAC of the associated data and
 * the position under a key of its own (the synthetic-IV construction), so an IV repeats only with
 * the very same message, which GCM tolerates, and what such a cursor reveals is only that two of the
 * account's own cursors name the same row. The gateway relies on it: streams of one key standing at
 * the same place ask the same question and share one read (gateway/src/streams/shared-reads.ts). A
 * feed's end is sealed with a random IV instead: it names the whole server's horizon, and two equal
 * ends would tell a client that no transaction began anywhere in between. Cursors sealed with a
 * random IV before still open.
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const POSITION_BYTES = 24;
const SEALED_BYTES = IV_BYTES + POSITION_BYTES + TAG_BYTES;

/**
 * One list's sealing, its key and its name: 24 bytes of position in, a cursor out. Exported for a
 * list whose position is neither a feed's nor a newest-first list's (the console's security log).
 */
export class PositionSeal {
  private readonly key: Buffer;
  private readonly ivKey: Buffer;

  constructor(
    secret: Buffer,
    keyInfo: string,
    private readonly list: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), keyInfo, 32));
    this.ivKey = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `${keyInfo} iv`, 32));
  }

  /** `plain`: POSITION_BYTES (24) bytes; `linkable`: the same position gives the same cursor (see above). */
  sealBytes(accountId: string, plain: Buffer, linkable = true): string {
    if (plain.length !== POSITION_BYTES) throw new Error(`a sealed position is ${POSITION_BYTES} bytes, not ${plain.length}`);
    const associatedData = this.associatedData(accountId);
    const iv = linkable ? createHmac('sha256', this.ivKey).update(associatedData).update(plain).digest().subarray(0, IV_BYTES) : randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(associatedData);
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /** The 24 bytes a cursor holds; a cursor this list did not give this account is a BAD_USER_INPUT. */
  openBytes(accountId: string, cursor: string): Buffer {
    if (!isSealedForm(cursor)) foreignCursor();
    const bytes = Buffer.from(cursor, 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(this.associatedData(accountId));
      decipher.setAuthTag(bytes.subarray(IV_BYTES + POSITION_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, IV_BYTES + POSITION_BYTES)), decipher.final()]);
    } catch {
      foreignCursor();
    }
  }

  seal(accountId: string, number: bigint, id: string, linkable = true): string {
    const plain = Buffer.alloc(POSITION_BYTES);
    plain.writeBigUInt64BE(number, 0);
    Buffer.from(id.replaceAll('-', ''), 'hex').copy(plain, 8);
    return this.sealBytes(accountId, plain, linkable);
  }

  open(accountId: string, cursor: string): { number: bigint; id: Uuid } {
    const plain = this.openBytes(accountId, cursor);
    const hex = plain.subarray(8).toString('hex');
    const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}` as Uuid;
    return { number: plain.readBigUInt64BE(0), id };
  }

  private associatedData(accountId: string): Buffer {
    return Buffer.from(`${this.list}:${accountId}`, 'utf8');
  }
}

function isSealedForm(cursor: string): boolean {
  const bytes = Buffer.from(cursor, 'base64url');
  return bytes.length === SEALED_BYTES && bytes.toString('base64url') === cursor;
}

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

/** The cursors of a commit-ordered feed (commit-order.ts). */
export class SealedFeedCursors {
  private readonly positions: PositionSeal;

  constructor(secret: Buffer, options: SealedFeedCursorsOptions) {
    this.positions = new PositionSeal(secret, options.keyInfo, options.feed);
  }

  forAccount(accountId: string): AccountFeedCursors {
    return { encode: (position) => this.encode(accountId, position), decode: (cursor) => this.decode(accountId, cursor) };
  }

  encode(accountId: string, position: FeedPosition): string {
    return this.positions.seal(accountId, BigInt(position.xid), position.id, !isFeedEnd(position));
  }

  decode(accountId: string, cursor: string | null | undefined): FeedPosition | undefined {
    if (cursor === null || cursor === undefined) return undefined;
    const { number, id } = this.positions.open(accountId, cursor);
    return { xid: number.toString(), id };
  }
}

/** A newest-first list's cursors for one account. */
export interface AccountKeysetCursors {
  encode(row: { at: Date; id: string }): string;
  /** The position a cursor names; undefined for the first page. A cursor this account was not given is a BAD_USER_INPUT. */
  decode(cursor: string | null | undefined): KeysetPosition | undefined;
}

export interface SealedKeysetCursorsOptions {
  /** The list and its ordering (pagination.ts `cursorTag`): bound into every cursor. */
  tag: CursorTag;
  /** HKDF's info for the list's key. */
  keyInfo: string;
}

/**
 * The cursors of a newest-first list (pagination.ts `inKeysetOrder`). The list's cursors issued in
 * the clear before they were sealed still open, so that a client paging across the upgrade keeps
 * its place: they hold only the time and id of a row the client was given.
 */
export class SealedKeysetCursors {
  private readonly positions: PositionSeal;

  constructor(
    secret: Buffer,
    private readonly options: SealedKeysetCursorsOptions,
  ) {
    this.positions = new PositionSeal(secret, options.keyInfo, options.tag.tag);
  }

  forAccount(accountId: string): AccountKeysetCursors {
    return {
      // Times before 1970 are negative: their 64 bits are kept as two's complement.
      encode: (row) => this.positions.seal(accountId, BigInt.asUintN(64, BigInt(row.at.getTime())), row.id),
      decode: (cursor) => {
        if (cursor === null || cursor === undefined) return undefined;
        if (!isSealedForm(cursor)) return decodeKeysetCursor(this.options.tag, cursor);
        const { number, id } = this.positions.open(accountId, cursor);
        return keysetPosition(new Date(Number(BigInt.asIntN(64, number))), id);
      },
    };
  }
}

/**
 * What a running service makes once, when it first asks (cursors' keys are derived from the secret
 * its configuration holds once per service, not per request).
 */
export function perRuntime<Runtime extends object, T>(make: (runtime: Runtime) => T): (runtime: Runtime) => T {
  const made = new WeakMap<Runtime, T>();
  return (runtime) => {
    let value = made.get(runtime);
    if (value === undefined) made.set(runtime, (value = make(runtime)));
    return value;
  };
}
