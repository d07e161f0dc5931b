import DataLoader from 'dataloader';

/**
 * A per-request loader by id: one query per batch, results handed back in key order with null for
 * ids the query did not return (absent, or another account's).
 */
export function loaderById<Row extends { id: string }, Id extends string = string>(
  fetchMany: (ids: readonly Id[]) => Promise<Row[]>,
): DataLoader<Id, Row | null> {
  return new DataLoader(async (ids) => {
    const rows = await fetchMany(ids);
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => byId.get(id) ?? null);
  });
}

/** A per-request loader of the rows grouped under each key (e.g. fills by order id). */
export function loaderOfGroups<Row, Key extends string = string>(
  fetchMany: (keys: readonly Key[]) => Promise<Row[]>,
  keyOf: (row: Row) => string,
): DataLoader<Key, Row[]> {
  return new DataLoader(async (keys) => {
    const rows = await fetchMany(keys);
    const groups = new Map<string, Row[]>();
    for (const row of rows) {
      const key = keyOf(row);
      const group = groups.get(key);
      if (group) group.push(row);
      else groups.set(key, [row]);
    }
    return keys.map((key) => groups.get(key) ?? []);
  });
}
