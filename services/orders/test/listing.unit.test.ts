import { describe, expect, it } from 'vitest';
import { GraphQLError } from 'graphql';
import { parseUuid, receiveId } from '@ots/shared/ids';
import { encodeCursor } from '@ots/shared/pagination';
import { refusal } from '@ots/shared/testing/refusal';
import { SealedFeedCursors } from '@ots/shared/sealed-cursors';
import { cursorOf, inWholeMilliseconds, normaliseFilter, positionAfter, syncEndAt } from '../src/domain.ts';
import { listCursorsOf } from './support/list-cursors.ts';

const row = {
  id: parseUuid('0190f5a2-0000-7000-8000-00000000000a')!,
  submitted_at: new Date('2026-11-21T14:03:07.120Z'),
  updated_at: new Date('2026-11-21T14:09:58.731Z'),
};
const cursorsOf = listCursorsOf;
const account = '0190f5a2-0000-7000-8000-0000000000aa';
const sync = cursorsOf(account);

function badInput(run: () => unknown): GraphQLError {
  const error = refusal(run);
  expect(error.extensions.code).toBe('BAD_USER_INPUT');
  return error;
}

describe('cursors', () => {
  it('round-trip the sort position of each ordering: submission time, or change stamp, to the millisecond', () => {
    expect(positionAfter('SUBMITTED_AT_DESC', cursorOf('SUBMITTED_AT_DESC', row, sync), sync)).toEqual({
      orderBy: 'SUBMITTED_AT_DESC',
      after: { at: row.submitted_at, id: row.id },
    });
    expect(positionAfter('UPDATED_AT_ASC', cursorOf('UPDATED_AT_ASC', row, sync), sync)).toEqual({ orderBy: 'UPDATED_AT_ASC', after: { at: row.updated_at, id: row.id } });
  });

  it('are opaque: neither ordering shows its position, and another account\'s are refused', () => {
    for (const orderBy of ['SUBMITTED_AT_DESC', 'UPDATED_AT_ASC'] as const) {
      const cursor = cursorOf(orderBy, row, sync);
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
      const text = Buffer.from(cursor, 'base64url').toString('latin1');
      for (const time of [row.submitted_at, row.updated_at]) for (const readable of [time.toISOString(), String(time.getTime())]) expect(text).not.toContain(readable);
      expect(Buffer.from(cursor, 'base64url').toString('hex')).not.toContain(row.id.replaceAll('-', ''));
      expect(badInput(() => positionAfter(orderBy, cursor, cursorsOf('0190f5a2-0000-7000-8000-0000000000cc'))).extensions.argumentName).toBe('after');
    }
  });

  it('of the sync as it paged by commit order still open, as a commit position, never misread as a time; another account\'s are refused', () => {
    const secret = Buffer.from('the test secret, long enough to seal', 'utf8');
    const former = new SealedFeedCursors(secret, { feed: 'orders:UPDATED_AT_ASC', keyInfo: 'test' }).forAccount(account);
    const position = { xid: '73219', id: row.id };
    expect(positionAfter('UPDATED_AT_ASC', former.encode(position), sync)).toEqual({ orderBy: 'UPDATED_AT_ASC', after: { formerCommitPosition: position } });
    expect(badInput(() => positionAfter('UPDATED_AT_ASC', former.encode(position), cursorsOf('0190f5a2-0000-7000-8000-0000000000bb'))).extensions.argumentName).toBe('after');
  });

  it('of the sync end just after the settled stamp are not linkable: the same end seals differently each time', () => {
    const end = syncEndAt(row.updated_at);
    const [one, two] = [sync.sync.encode(end), sync.sync.encode(end)];
    expect(one).not.toBe(two);
    expect(positionAfter('UPDATED_AT_ASC', one, sync)).toEqual({ orderBy: 'UPDATED_AT_ASC', after: end });
    expect(sync.sync.encode({ at: row.updated_at, id: row.id })).toBe(sync.sync.encode({ at: row.updated_at, id: row.id }));
  });

  it('of the sync as first issued, in the clear, are refused (a cursor a client can write would give away transaction ids); the newest-first list\'s former ones still open', () => {
    const former = encodeCursor({ tag: 'UPDATED_AT_ASC' }, ['73219', row.id]);
    expect(badInput(() => positionAfter('UPDATED_AT_ASC', former, sync)).extensions.argumentName).toBe('after');
    const formerNewestFirst = encodeCursor({ tag: 'SUBMITTED_AT_DESC' }, [row.submitted_at.toISOString(), row.id]);
    expect(positionAfter('SUBMITTED_AT_DESC', formerNewestFirst, sync)).toEqual({ orderBy: 'SUBMITTED_AT_DESC', after: { at: row.submitted_at, id: row.id } });
  });

  it('mean no position when absent', () => {
    expect(positionAfter('SUBMITTED_AT_DESC', undefined, sync)).toEqual({ orderBy: 'SUBMITTED_AT_DESC', after: undefined });
    expect(positionAfter('UPDATED_AT_ASC', null, sync)).toEqual({ orderBy: 'UPDATED_AT_ASC', after: undefined });
  });

  it('of one ordering are refused by the other', () => {
    const error = badInput(() => positionAfter('UPDATED_AT_ASC', cursorOf('SUBMITTED_AT_DESC', row, sync), sync));
    expect(error.extensions.argumentName).toBe('after');
  });

  it.each([
    ['garbage', 'not a cursor'],
    ['an edited id', encodeCursor({ tag: 'orders:SUBMITTED_AT_DESC' }, ['2026-11-21T14:03:07.120Z', "1' or '1'='1"])],
    ['an edited time', encodeCursor({ tag: 'orders:SUBMITTED_AT_DESC' }, ['yesterday', row.id])],
    ['a time outside the ISO form', encodeCursor({ tag: 'orders:SUBMITTED_AT_DESC' }, ['2026-11-21', row.id])],
    ['a missing key', encodeCursor({ tag: 'orders:SUBMITTED_AT_DESC' }, [row.id])],
  ])('holding %s are refused with BAD_USER_INPUT', (_case, cursor) => {
    badInput(() => positionAfter('SUBMITTED_AT_DESC', cursor, sync));
  });

  it.each([
    ['a time instead of a commit position (a cursor of the clock-stamped sync)', encodeCursor({ tag: 'UPDATED_AT_ASC' }, ['2026-11-21T15:00:00.001Z', row.id])],
    ['an edited commit position', encodeCursor({ tag: 'UPDATED_AT_ASC' }, ['1 or 1=1', row.id])],
    ['an edited id', encodeCursor({ tag: 'UPDATED_AT_ASC' }, ['73219', 'x'])],
  ])('of the sync holding %s are refused with BAD_USER_INPUT', (_case, cursor) => {
    badInput(() => positionAfter('UPDATED_AT_ASC', cursor, sync));
  });
});

describe('a sync page', () => {
  const at = (ms: number, id: string) => ({ updated_at: new Date(Date.UTC(2026, 10, 21, 14, 0, 0, ms)), id });

  it('that is full never ends inside a millisecond: the rows of the millisecond the next row shares are left for the next page', () => {
    expect(inWholeMilliseconds([at(1, 'a'), at(2, 'b'), at(3, 'c'), at(3, 'd'), at(3, 'e')], 4)).toEqual({ rows: [at(1, 'a'), at(2, 'b')] });
    expect(inWholeMilliseconds([at(1, 'a'), at(2, 'b'), at(3, 'c')], 2)).toEqual({ rows: [at(1, 'a'), at(2, 'b')] });
  });

  it('that is not full is kept whole', () => {
    expect(inWholeMilliseconds([at(1, 'a'), at(1, 'b')], 2)).toEqual({ rows: [at(1, 'a'), at(1, 'b')] });
  });

  it('that holds one millisecond only, which the next row shares too, is that whole millisecond: the rest is read after the last row fetched', () => {
    expect(inWholeMilliseconds([at(3, 'a'), at(3, 'b'), at(3, 'c')], 2)).toEqual({ rows: [at(3, 'a'), at(3, 'b'), at(3, 'c')], restOf: at(3, 'c') });
  });
});

describe('normaliseFilter', () => {
  it('passes no filter as an empty one', () => {
    expect(normaliseFilter(undefined)).toEqual({});
    expect(normaliseFilter(null)).toEqual({});
    expect(normaliseFilter({ symbol: null, status: null, side: null })).toEqual({});
  });

  it('compares as orders are stored: symbol upper-cased, strategy id lower-cased, statuses once each', () => {
    const submittedAfter = new Date('2026-01-01T00:00:00.000Z');
    expect(
      normaliseFilter({
        status: ['SUBMITTED', 'FILLED', 'SUBMITTED'],
        symbol: 'brk.b',
        side: 'SELL',
        strategyId: receiveId('0190F5A2-0000-7000-8000-00000000000A'),
        clientOrderId: 'Mixed.Case',
        submittedAfter,
      }),
    ).toEqual({
      statuses: ['SUBMITTED', 'FILLED'],
      symbol: 'BRK.B',
      side: 'SELL',
      strategyId: '0190f5a2-0000-7000-8000-00000000000a',
      clientOrderId: 'Mixed.Case',
      submittedAfter,
    });
  });

  it('recognises filters no order can match, so that no malformed value reaches Postgres', () => {
    expect(normaliseFilter({ status: [] })).toBeUndefined();
    expect(normaliseFilter({ strategyId: receiveId('strategy-1') })).toBeUndefined();
    // Upper-casing would spell these as stored symbols (SS, FI, IBM): a filter on them matches nothing.
    for (const symbol of ['', 'ß', 'ﬁ', 'ıBM', 'A'.repeat(17)]) expect(normaliseFilter({ symbol }), JSON.stringify(symbol)).toBeUndefined();
  });
});
