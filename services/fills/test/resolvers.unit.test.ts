import { describe, expect, it } from 'vitest';
import { encodeCursor } from '@ots/shared/pagination';
import { SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import { FILLS_ORDERING, normaliseFilter } from '../src/domain.ts';
import type { FillObject } from '../src/mappers.ts';

const ID = '0190F5A2-0000-7000-8000-00000000000A';

describe('normaliseFilter', () => {
  it('filters by nothing when the filter or its members are absent or null', () => {
    expect(normaliseFilter(undefined)).toEqual({});
    expect(normaliseFilter(null)).toEqual({});
    expect(normaliseFilter({ orderSubmissionId: null, strategyId: null, symbol: null, executedAfter: null, executedBefore: null })).toEqual({});
  });

  it('spells ids and symbols as they are stored', () => {
    const at = new Date('2026-03-02T09:00:00.000Z');
    expect(normaliseFilter({ orderSubmissionId: ID, strategyId: ID, symbol: 'acme', executedAfter: at, executedBefore: at })).toEqual({
      orderSubmissionId: ID.toLowerCase(),
      strategyId: ID.toLowerCase(),
      symbol: 'ACME',
      executedAfter: at,
      executedBefore: at,
    });
  });

  it('matches nothing for an empty or non-UUID id, never everything', () => {
    for (const id of ['', 'not-a-uuid', `${ID}x`]) {
      expect(normaliseFilter({ orderSubmissionId: id }), JSON.stringify(id)).toBeUndefined();
      expect(normaliseFilter({ strategyId: id }), JSON.stringify(id)).toBeUndefined();
    }
  });

  it('matches nothing for a symbol no fill can have, even one that upper-casing spells as a stored one', () => {
    for (const symbol of ['', 'ß', 'ﬁ', 'ıBM', 'ſPY', 'A'.repeat(17), 'AA PL']) {
      expect(normaliseFilter({ symbol }), JSON.stringify(symbol)).toBeUndefined();
    }
  });
});

describe('cursors', () => {
  const seal = new SealedKeysetCursors(Buffer.from('the test secret, long enough to seal', 'utf8'), { tag: FILLS_ORDERING, keyInfo: 'test' });
  const cursors = seal.forAccount('0190f5a2-0000-7000-8000-0000000000aa');
  const parseCursor = (after: string | null | undefined) => cursors.decode(after);
  const cursorOf = (fill: FillObject) => cursors.encode({ at: fill.executedAt, id: fill.id });

  it('are tagged with the list and its ordering, and the tag first issued still opens, so cursors clients hold stay valid', () => {
    expect(FILLS_ORDERING.tag).toBe('fills:EXECUTED_AT_DESC');
    expect(parseCursor(encodeCursor({ tag: 'fills.executedAt.desc' }, ['2026-03-02T09:00:00.120Z', ID.toLowerCase()]))).toEqual({
      at: new Date('2026-03-02T09:00:00.120Z'),
      id: ID.toLowerCase(),
    });
  });

  it('round-trip the position of a fill', () => {
    const fill = { executedAt: new Date('2026-03-02T09:00:00.120Z'), id: ID.toLowerCase() } as FillObject;
    expect(parseCursor(cursorOf(fill))).toEqual({ at: fill.executedAt, id: fill.id });
    expect(parseCursor(undefined)).toBeUndefined();
    expect(parseCursor(null)).toBeUndefined();
  });

  it.each([
    ['a year', ['2030', ID]],
    ['a time without milliseconds', ['2026-03-02T09:00:00Z', ID]],
    ['an impossible date', ['2026-02-30T09:00:00.000Z', ID]],
    ['not a time', ['yesterday', ID]],
    ['an id that is not a UUID', ['2026-03-02T09:00:00.000Z', 'x']],
  ])('refuse a cursor edited to hold %s with BAD_USER_INPUT on after', (_case, keys) => {
    expect(() => parseCursor(encodeCursor(FILLS_ORDERING, keys))).toThrow(
      expect.objectContaining({
        message: 'after is not a cursor issued for this list and ordering',
        extensions: expect.objectContaining({ code: 'BAD_USER_INPUT', argumentName: 'after' }),
      }),
    );
  });

  it('refuse a cursor of another list', () => {
    expect(() => parseCursor(encodeCursor({ tag: 'strategies:CREATED_AT_DESC' }, ['2026-03-02T09:00:00.000Z', ID]))).toThrow(/after is not a cursor/);
    const strategies = new SealedKeysetCursors(Buffer.from('the test secret, long enough to seal', 'utf8'), { tag: { tag: 'strategies:CREATED_AT_DESC' }, keyInfo: 'test' });
    const theirs = strategies.forAccount('0190f5a2-0000-7000-8000-0000000000aa').encode({ at: new Date('2026-03-02T09:00:00.000Z'), id: ID.toLowerCase() });
    expect(() => parseCursor(theirs)).toThrow(/after is not a cursor/);
  });

  it("are opaque: a fill's time and id cannot be read from one, and another account's is refused", () => {
    const fill = { executedAt: new Date('2026-03-02T09:00:00.120Z'), id: ID.toLowerCase() } as FillObject;
    const cursor = cursorOf(fill);
    const bytes = Buffer.from(cursor, 'base64url');
    expect(bytes.toString('latin1')).not.toContain('2026-03-02');
    expect(bytes.toString('hex')).not.toContain(ID.toLowerCase().replaceAll('-', ''));
    expect(() => seal.forAccount('0190f5a2-0000-7000-8000-0000000000bb').decode(cursor)).toThrow(/after is not a cursor/);
  });
});
