import { badUserInput } from './errors.ts';

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
 * Keyset cursors: the sort-key values of the last row seen, tagged with the ordering they belong
 * to, so that a cursor of one ordering is refused by another instead of silently mis-paging.
 */
export function encodeCursor(ordering: string, keys: readonly string[]): string {
  return Buffer.from(JSON.stringify([ordering, ...keys]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | null | undefined, ordering: string, keyCount: number): string[] | undefined {
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
    parts[0] !== ordering ||
    !parts.every((part) => typeof part === 'string')
  ) {
    throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
  }
  return parts.slice(1) as string[];
}

export interface Connection<T> {
  nodes: T[];
  edges: { cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** Builds a connection from a query that fetched `size + 1` rows: the extra row only says that more exist. */
export function toConnection<T>(rows: readonly T[], size: number, cursorOf: (row: T) => string): Connection<T> {
  const nodes = rows.slice(0, size);
  const edges = nodes.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    nodes,
    edges,
    pageInfo: { hasNextPage: rows.length > size, endCursor: edges.at(-1)?.cursor ?? null },
  };
}
