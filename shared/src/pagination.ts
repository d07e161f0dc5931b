import { sql, type SelectQueryBuilder } from 'kysely';
import { badUserInput } from './errors.ts';
import { parseUuid, type Uuid } from './ids.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** `first` of every connection: 1–200, default 50 (contract section 4). */
export function pageSize(first: number | null | undefined): number {
  if (first === null || first === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
    throw badUserInput(`first must be between 1 and ${MAX_PAGE_SIZE}, got ${first}`, 'first');
  }
  return first;
}

/**
 * What a list's cursors are tagged with: `<list>:<ordering>`, the ordering as the schema names it
 * (`fills:EXECUTED_AT_DESC`), one style for every pager, so that a cursor of one list or ordering is
 * refused by another instead of silently mis-paging. A list whose tag changed still accepts its
 * former one: a client paging across the upgrade keeps its place.
 */
export interface CursorTag {
  readonly tag: string;
  readonly formerTag?: string;
}

export function cursorTag(list: string, ordering: string, formerTag?: string): CursorTag {
  return { tag: `${list}:${ordering}`, ...(formerTag === undefined ? {} : { formerTag }) };
}

/** Keyset cursors: the sort-key values of the last row seen, after the list's tag. */
export function encodeCursor(tag: CursorTag, keys: readonly string[]): string {
  return Buffer.from(JSON.stringify([tag.tag, ...keys]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | null | undefined, tag: CursorTag, keyCount: number): string[] | undefined {
  if (cursor === null || cursor === undefined) return undefined;
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parts = undefined;
  }
  if (
    !Array.isArray(parts) ||
    parts.length !== keyCount + 1 ||
    (parts[0] !== tag.tag && (tag.formerTag === undefined || parts[0] !== tag.formerTag)) ||
    !parts.every((part) => typeof part === 'string')
  ) {
    foreignCursor();
  }
  return parts.slice(1) as string[];
}

/** Why a cursor was refused: the same words for every list, whatever was wrong with it. */
export function foreignCursor(): never {
  throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
}

declare const keysetBrand: unique symbol;

/**
 * A decoded cursor of a newest-first list: the time and id of the last row a page held. Only a
 * cursor's decoder makes one (`decodeKeysetCursor`, sealed-cursors.ts), so a repository that takes
 * it never sends Postgres an edited key.
 */
export interface KeysetPosition {
  readonly at: Date;
  readonly id: Uuid;
  readonly [keysetBrand]: true;
}

/** Times are stored to the millisecond, so the ISO form in the cursor round-trips exactly. */
export function encodeKeysetCursor(tag: CursorTag, row: { at: Date; id: string }): string {
  return encodeCursor(tag, [row.at.toISOString(), row.id]);
}

/** For the cursors' decoders alone: a position read from a cursor they checked. */
export function keysetPosition(at: Date, id: Uuid): KeysetPosition {
  return { at, id } as KeysetPosition;
}

/** The position a cursor names; undefined for the first page. A cursor whose keys were edited is refused. */
export function decodeKeysetCursor(tag: CursorTag, cursor: string | null | undefined): KeysetPosition | undefined {
  const keys = decodeCursor(cursor, tag, 2);
  if (!keys) return undefined;
  const [iso, sentId] = keys as [string, string];
  const at = new Date(iso);
  const id = parseUuid(sentId);
  if (Number.isNaN(at.getTime()) || at.toISOString() !== iso || !id) foreignCursor();
  return keysetPosition(at, id);
}

export interface KeysetPage {
  /** The time column the list is sorted by, newest first, and the unique id column that breaks ties. */
  time: string;
  id?: string;
  after: KeysetPosition | undefined;
  /** Rows to fetch (a page size plus one, to tell whether more exist). */
  limit: number;
}

/**
 * Orders a select newest first by `(time, id)` and starts it after `after`: a keyset page, so page
 * N costs what page 1 costs, given an index on `(account_id, time, id)`. Scope and filter the query
 * before or after; `inCommitOrder` (commit-order.ts) is the same for lists paged by commit order.
 */
export function inKeysetOrder<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: KeysetPage,
): SelectQueryBuilder<DB, TB, O> {
  const time = sql.ref(page.time);
  const id = sql.ref(page.id ?? 'id');
  let ordered = query;
  if (page.after) ordered = ordered.where(sql<boolean>`(${time}, ${id}) < (${page.after.at}, ${page.after.id})`);
  return ordered.orderBy(time, 'desc').orderBy(id, 'desc').limit(page.limit);
}

export interface Connection<T> {
  nodes: T[];
  edges: { cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/**
 * Builds a connection from a query that fetched `size + 1` rows: the extra row only says that more
 * exist. Its cursors are made when read, once each: sealing one costs microseconds
 * (sealed-cursors.ts), and most clients read only `endCursor`, not every edge's.
 */
export function toConnection<T>(rows: readonly T[], size: number, cursorOf: (row: T) => string): Connection<T> {
  const nodes = rows.slice(0, size);
  const edges = nodes.map((node) => {
    let cursor: string | undefined;
    return {
      node,
      get cursor() {
        return (cursor ??= cursorOf(node));
      },
    };
  });
  return {
    nodes,
    edges,
    pageInfo: {
      hasNextPage: rows.length > size,
      get endCursor() {
        return edges.at(-1)?.cursor ?? null;
      },
    },
  };
}
