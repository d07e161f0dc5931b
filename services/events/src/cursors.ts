import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { FeedPosition } from '@ots/shared/commit-order';
import { foreignCursor } from '@ots/shared/pagination';
import type { Uuid } from '@ots/shared/ids';

/**
 * Event cursors are opaque (contract section 4): a feed position holds a server-wide transaction
 * id, which in the clear would tell a client how busy every other account is. The position is
 * sealed with AES-256-GCM under a key derived from WEBHOOK_SECRET_KEY (every events replica holds
 * it), with the account id as associated data: a cursor is refused by any other account, and an
 * edited one by everyone. 24 bytes of position (xid8 and uuid) make a 70-character cursor.
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const POSITION_BYTES = 24;
const FEED = 'events:commit_order';

export class EventCursors {
  private readonly key: Buffer;

  constructor(secretKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'event feed cursors v1', 32));
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

  /** The position a cursor names; undefined when there is none. A cursor this account was not given is a BAD_USER_INPUT. */
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
    return Buffer.from(`${FEED}:${accountId}`, 'utf8');
  }
}
