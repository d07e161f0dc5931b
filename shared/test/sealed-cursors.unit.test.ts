import { describe, expect, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { SealedFeedCursors } from '../src/sealed-cursors.ts';
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

  it('show neither the transaction id nor the row id, and differ each time they are issued', () => {
    const cursor = cursors.encode(accountId, position);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const decoded = Buffer.from(cursor, 'base64url');
    expect(decoded.toString('latin1')).not.toContain(position.xid);
    expect(decoded.toString('hex')).not.toContain(position.id.replaceAll('-', ''));
    expect(cursors.encode(accountId, position)).not.toBe(cursor);
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
