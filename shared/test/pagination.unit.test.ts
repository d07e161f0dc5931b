import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  cursorTag,
  decodeCursor,
  decodeKeysetCursor,
  encodeCursor,
  encodeKeysetCursor,
  pageSize,
  toConnection,
} from '../src/pagination.ts';
import { refusal } from '../src/testing/refusal.ts';

describe('pageSize: `first` of every connection', () => {
  it('defaults to 50 when absent', () => {
    expect(pageSize(undefined)).toBe(50);
    expect(pageSize(null)).toBe(50);
    expect(DEFAULT_PAGE_SIZE).toBe(50);
  });

  it('accepts 1 to 200', () => {
    expect(pageSize(1)).toBe(1);
    expect(pageSize(137)).toBe(137);
    expect(pageSize(200)).toBe(200);
    expect(MAX_PAGE_SIZE).toBe(200);
  });

  it.each([0, 201, -1, 1.5, 1000, Number.NaN, Number.POSITIVE_INFINITY])('refuses %s with BAD_USER_INPUT naming `first`', (first) => {
    const error = refusal(() => pageSize(first));
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(error.extensions.argumentName).toBe('first');
  });
});

describe('cursors', () => {
  it('round-trip the sort keys of their ordering', () => {
    const keys = ['2026-11-21T14:03:07.120Z', '01a2002f-5e6c-707d-8b35-116f38247cd4'];
    const cursor = encodeCursor({ tag: 'SUBMITTED_AT_DESC' }, keys);
    expect(decodeCursor(cursor, { tag: 'SUBMITTED_AT_DESC' }, 2)).toEqual(keys);
  });

  it('are URL-safe strings, whatever their keys hold (the services seal them: sealed-cursors.ts)', () => {
    const keys = ['a value with spaces / and + signs', 'x'];
    const cursor = encodeCursor({ tag: 'UPDATED_AT_ASC' }, keys);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, { tag: 'UPDATED_AT_ASC' }, 2)).toEqual(keys);
  });

  it('no cursor means the first page', () => {
    expect(decodeCursor(undefined, { tag: 'SUBMITTED_AT_DESC' }, 2)).toBeUndefined();
    expect(decodeCursor(null, { tag: 'SUBMITTED_AT_DESC' }, 2)).toBeUndefined();
  });

  it('a cursor of another ordering is refused rather than mis-paging', () => {
    const cursor = encodeCursor({ tag: 'SUBMITTED_AT_DESC' }, ['2026-11-21T14:03:07.120Z', 'id']);
    const error = refusal(() => decodeCursor(cursor, { tag: 'UPDATED_AT_ASC' }, 2));
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(error.extensions.argumentName).toBe('after');
  });

  it('are tagged with the list and its ordering, and a former tag of the list is still accepted', () => {
    const tag = cursorTag('fills', 'EXECUTED_AT_DESC', 'fills.executedAt.desc');
    expect(tag.tag).toBe('fills:EXECUTED_AT_DESC');
    const keys = ['2026-11-21T14:03:07.120Z', 'id'];
    expect(decodeCursor(encodeCursor(tag, keys), tag, 2)).toEqual(keys);
    expect(decodeCursor(encodeCursor({ tag: 'fills.executedAt.desc' }, keys), tag, 2)).toEqual(keys);
    expect(refusal(() => decodeCursor(encodeCursor({ tag: 'strategies:CREATED_AT_DESC' }, keys), tag, 2)).extensions.argumentName).toBe('after');
  });

  it('a cursor with the wrong number of keys is refused', () => {
    const cursor = encodeCursor({ tag: 'SUBMITTED_AT_DESC' }, ['only-one']);
    expect(refusal(() => decodeCursor(cursor, { tag: 'SUBMITTED_AT_DESC' }, 2)).extensions.code).toBe('BAD_USER_INPUT');
  });

  it.each([
    ['garbage', '!!!not base64!!!'],
    ['base64 of plain text', Buffer.from('hello').toString('base64url')],
    ['base64 of a JSON object', Buffer.from('{"a":1}').toString('base64url')],
    ['keys that are not strings', Buffer.from('["SUBMITTED_AT_DESC",1,2]').toString('base64url')],
    ['the empty string', ''],
  ])('refuses %s with BAD_USER_INPUT naming `after`', (_what, cursor) => {
    const error = refusal(() => decodeCursor(cursor, { tag: 'SUBMITTED_AT_DESC' }, 2));
    expect(error.extensions.code).toBe('BAD_USER_INPUT');
    expect(error.extensions.argumentName).toBe('after');
  });
});

describe('toConnection', () => {
  const cursorOf = (row: { id: string }) => encodeCursor({ tag: 'T' }, [row.id]);

  it('with one row more than the page: that row is left out and hasNextPage is true', () => {
    const rows = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
    const connection = toConnection(rows, 2, cursorOf);
    expect(connection.nodes.map((n) => n.id)).toEqual(['a', 'b']);
    expect(connection.edges.map((e) => e.node.id)).toEqual(['a', 'b']);
    expect(connection.pageInfo).toEqual({ hasNextPage: true, endCursor: cursorOf({ id: 'b' }) });
    expect(decodeCursor(connection.pageInfo.endCursor, { tag: 'T' }, 1)).toEqual(['b']);
  });

  it('the last page says so; an empty page has no end cursor', () => {
    expect(toConnection([{ id: 'a' }], 2, cursorOf).pageInfo).toEqual({ hasNextPage: false, endCursor: cursorOf({ id: 'a' }) });
    expect(toConnection([], 2, cursorOf)).toEqual({ nodes: [], edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });
});

describe('keyset cursors: newest-first lists by time and id', () => {
  const row = { at: new Date('2026-11-21T14:03:07.120Z'), id: '01a2002f-5e6c-707d-8b35-116f38247cd4' };

  it('round-trip the time and id of a row', () => {
    expect(decodeKeysetCursor({ tag: 'T' }, encodeKeysetCursor({ tag: 'T' }, row))).toEqual(row);
    expect(decodeKeysetCursor({ tag: 'T' }, undefined)).toBeUndefined();
  });

  it('give the id in Postgres canonical form', () => {
    const cursor = encodeKeysetCursor({ tag: 'T' }, { ...row, id: row.id.toUpperCase() });
    expect(decodeKeysetCursor({ tag: 'T' }, cursor)?.id).toBe(row.id);
  });

  it.each([
    ['another ordering', encodeKeysetCursor({ tag: 'U' }, row)],
    ['an edited time', encodeCursor({ tag: 'T' }, ['2026-11-21T14:03:07Z', row.id])],
    ['a time that is no time', encodeCursor({ tag: 'T' }, ['yesterday', row.id])],
    ['an id that is not a UUID', encodeCursor({ tag: 'T' }, [row.at.toISOString(), 'x'])],
  ])('refuse %s with BAD_USER_INPUT naming `after`', (_what, cursor) => {
    const error = refusal(() => decodeKeysetCursor({ tag: 'T' }, cursor));
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'after' });
  });
});
