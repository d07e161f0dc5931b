import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { feedEndAt } from '../src/commit-order.ts';
import { newId } from '../src/ids.ts';
import { cursorTag, encodeKeysetCursor } from '../src/pagination.ts';
import { SealedFeedCursors, SealedKeysetCursors } from '../src/sealed-cursors.ts';
import { refusal } from '../src/testing/refusal.ts';

const secret = Buffer.from('a secret every replica holds, long enough', 'utf8');
const feed = { feed: 'items', keyInfo: 'item cursors v1' };
const cursors = new SealedFeedCursors(secret, feed);
const accountId = newId();
const position = { xid: '9007199254740993', id: newId() };

describe('sealed feed cursors', () => {
  it('round-trip a position for the account they were issued to, on every replica holding the secret', () => {
    const cursor = cursors.encode(accountId, position);
    expect(new SealedFeedCursors(Buffer.from(secret), feed).decode(accountId, cursor)).toEqual(position);
    expect(cursors.forAccount(accountId).decode(cursors.forAccount(accountId).encode(position))).toEqual(position);
    expect(cursors.decode(accountId, undefined)).toBeUndefined();
    expect(cursors.decode(accountId, null)).toBeUndefined();
  });

  it('show neither the transaction id nor the row id', () => {
    const cursor = cursors.encode(accountId, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const decoded = Buffer.from(cursor, 'base64url');
    expect(decoded.toString('latin1')).not.toContain(position.xid);
    expect(decoded.toString('hex')).not.toContain(position.id.replaceAll('-', ''));
  });

  it('seal one place to one cursor, and another place, account or feed to another, with an IV of its own', () => {
    const cursor = cursors.encode(accountId, position);
    expect(cursors.encode(accountId, { ...position })).toBe(cursor);
    const others = [
      cursors.encode(accountId, { ...position, xid: '9007199254740994' }),
      cursors.encode(accountId, { ...position, id: newId() }),
      cursors.encode(newId(), position),
      new SealedFeedCursors(secret, { ...feed, feed: 'other' }).encode(accountId, position),
    ];
    const ivs = new Set([cursor, ...others].map((sealed) => Buffer.from(sealed, 'base64url').subarray(0, 12).toString('hex')));
    expect(ivs.size).toBe(others.length + 1);
  });

  it('seal a feed\'s end anew each time: equal ends would say that no transaction began anywhere in between', () => {
    const end = feedEndAt('9007199254740993');
    const first = cursors.encode(accountId, end);
    const second = cursors.encode(accountId, end);
    expect(second).not.toBe(first);
    expect(cursors.decode(accountId, first)).toEqual(end);
    expect(cursors.decode(accountId, second)).toEqual(end);
  });

  it('open a cursor sealed with a random IV, as they were before', () => {
    const iv = randomBytes(12);
    const key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), feed.keyInfo, 32));
    const plain = Buffer.alloc(24);
    plain.writeBigUInt64BE(BigInt(position.xid), 0);
    Buffer.from(position.id.replaceAll('-', ''), 'hex').copy(plain, 8);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(`${feed.feed}:${accountId}`, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    expect(cursors.decode(accountId, Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url'))).toEqual(position);
  });

  it.each([
    ['another account', () => cursors.decode(newId(), cursors.encode(accountId, position))],
    ['another feed', () => new SealedFeedCursors(secret, { ...feed, feed: 'other' }).decode(accountId, cursors.encode(accountId, position))],
    ['another secret', () => new SealedFeedCursors(Buffer.from('another secret entirely, also long', 'utf8'), feed).decode(accountId, cursors.encode(accountId, position))],
    [
      'an edited byte',
      () => {
        const bytes = Buffer.from(cursors.encode(accountId, position), 'base64url');
        bytes[20] = bytes[20]! ^ 1;
        return cursors.decode(accountId, bytes.toString('base64url'));
      },
    ],
    ['a truncated cursor', () => cursors.decode(accountId, cursors.encode(accountId, position).slice(0, -4))],
    ['garbage', () => cursors.decode(accountId, 'not-a-cursor')],
  ])('refuse a cursor of %s with BAD_USER_INPUT naming `after`', (_, decode) => {
    expect(refusal(decode).extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'after' });
  });
});

describe('sealed keyset cursors', () => {
  const tag = cursorTag('items', 'CREATED_AT_DESC', 'items.createdAt.desc');
  const items = new SealedKeysetCursors(secret, { tag, keyInfo: 'item cursors v1' });
  const row = { at: new Date('2026-11-21T14:03:07.120Z'), id: newId() };

  it('round-trip a row\'s time and id, before 1970 too, and show neither', () => {
    const mine = items.forAccount(accountId);
    expect(mine.decode(mine.encode(row))).toEqual(row);
    const old = { at: new Date('1969-07-20T20:17:40.000Z'), id: row.id };
    expect(mine.decode(mine.encode(old))).toEqual(old);
    const bytes = Buffer.from(mine.encode(row), 'base64url');
    expect(bytes.toString('latin1')).not.toContain('2026');
    expect(bytes.toString('hex')).not.toContain(row.id.replaceAll('-', ''));
    expect(mine.decode(undefined)).toBeUndefined();
  });

  it("still open the list's cursors issued in the clear before, under its tag or its former one (they hold only a row the client was given)", () => {
    const mine = items.forAccount(accountId);
    expect(mine.decode(encodeKeysetCursor(tag, row))).toEqual(row);
    expect(mine.decode(encodeKeysetCursor({ tag: 'items.createdAt.desc' }, row))).toEqual(row);
  });

  it.each([
    ['another account', () => items.forAccount(newId()).decode(items.forAccount(accountId).encode(row))],
    ['another list', () => new SealedKeysetCursors(secret, { tag: cursorTag('others', 'CREATED_AT_DESC'), keyInfo: 'item cursors v1' }).forAccount(accountId).decode(items.forAccount(accountId).encode(row))],
    ['another list, in the clear', () => items.forAccount(accountId).decode(encodeKeysetCursor(cursorTag('others', 'CREATED_AT_DESC'), row))],
  ])('refuse a cursor of %s with BAD_USER_INPUT naming `after`', (_, decode) => {
    expect(refusal(decode).extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'after' });
  });
});
