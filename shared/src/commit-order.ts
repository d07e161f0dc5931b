import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Uuid } from './ids.ts';

/**
 * A commit-ordered feed: a table a client pages forward through, from its last cursor, and never
 * misses a row written after it (even by a transaction that commits late) and never loops.
 *
 * How: every insert and update of a row stores the writing transaction's id (`xid8`,
 * `pg_current_xact_id()`, 64 bits: it never wraps). Transaction ids are handed out in increasing
 * order, and a reader returns only rows whose id is below its snapshot's `xmin`, the oldest
 * transaction still running: every transaction below it has ended, so no row can later appear
 * there, behind a cursor the reader has already handed out. A row written by a transaction still in
 * flight (or a committed one above an older one in flight) is held back until everything before it
 * has ended, then shows up ahead of the cursor. An updated row gets the updater's id and moves
 * forward: a syncing client sees it again, in its newer state, and a sync never loops because each
 * row has one place in the order at any time.
 *
 * Why not timestamps: a stamp taken inside a transaction (`now()`, `clock_timestamp()`) is in the
 * order transactions ran, not the order they committed, so a slow transaction becomes visible with
 * an older stamp than rows a client has already seen. Making stamps follow commit order needs a
 * lock all writers of a scope take in turn (serialising them); transaction ids give the commit
 * horizon for free, with no lock at all.
 *
 * The cost: the horizon is the whole server's, so a long transaction anywhere (on any table, by
 * any service of the same Postgres server that has written something) holds the feed back until it
 * ends. The services bound that with `idle_in_transaction_session_timeout` and `statement_timeout`
 * (shared/src/db.ts): the feed lags by at most that, and never skips.
 */

/** The column name every feed uses for the writer's transaction id, unless told otherwise. */
const COMMIT_XID_COLUMN = 'commit_xid';

/** Where a reader stands: the transaction id and row id of the last row it was given. */
export interface FeedPosition {
  xid: string;
  id: Uuid;
}

export interface FeedColumns {
  /** The `xid8` column holding the writer's transaction id (default `commit_xid`). */
  xid?: string;
  /** A unique column that orders the rows one transaction wrote (default `id`). */
  id?: string;
}

export interface FeedPage extends FeedColumns {
  /** The position of the previous page's last row; undefined for the first page. */
  after: FeedPosition | undefined;
  /** Rows to fetch (a page size plus one, to tell whether more exist). */
  limit: number;
  /**
   * A horizon read earlier by `readFeedHorizon`, instead of the statement's own: a reader that must
   * name the feed's end when it finds nothing (`feedEndAt`) bounds its read by the horizon it names.
   */
  horizon?: string;
}

/**
 * Orders a select by commit order and keeps only what is safe to hand out: rows after `after`,
 * written by transactions below the visibility horizon. The query must select the xid and id
 * columns (a row's position is read back from them); scope and filter it before or after.
 * Horizon and rows come from the same statement, so from the same snapshot.
 */
export function inCommitOrder<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: FeedPage,
): SelectQueryBuilder<DB, TB, O> {
  const xid = sql.ref(page.xid ?? COMMIT_XID_COLUMN);
  const id = sql.ref(page.id ?? 'id');
  const horizon = page.horizon === undefined ? sql`pg_snapshot_xmin(pg_current_snapshot())` : sql`${page.horizon}::xid8`;
  let ordered = query.where(sql<boolean>`${xid} < ${horizon}`);
  if (page.after) {
    ordered = ordered.where(sql<boolean>`(${xid}, ${id}) > (${page.after.xid}::xid8, ${page.after.id})`);
  }
  return ordered.orderBy(xid).orderBy(id).limit(page.limit);
}

/**
 * As `inCommitOrder`, for a reader that follows the feed as it grows: the rows the horizon holds
 * back come too, up to the limit, each marked `held_back`. They sort after every row the feed may
 * hand out, so those are the first ones; a held-back one says that rows lie ahead which the reader
 * cannot have yet, and will once the transactions before them end (which nothing announces: the
 * reader looks again soon). One statement, so the marks and the rows come from one snapshot.
 */
export function aheadInCommitOrder<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: Pick<FeedPage, 'limit' | 'xid' | 'id'> & { after: FeedPosition },
) {
  const xid = sql.ref(page.xid ?? COMMIT_XID_COLUMN);
  const id = sql.ref(page.id ?? 'id');
  return query
    .select(sql<boolean>`${xid} >= pg_snapshot_xmin(pg_current_snapshot())`.as('held_back'))
    .where(sql<boolean>`(${xid}, ${id}) > (${page.after.xid}::xid8, ${page.after.id})`)
    .orderBy(xid)
    .orderBy(id)
    .limit(page.limit);
}

/** The position of a row the feed returned (pg hands `xid8` over as a decimal string). */
export function positionOf(row: Record<string, unknown>, columns: FeedColumns = {}): FeedPosition {
  const xid = row[columns.xid ?? COMMIT_XID_COLUMN];
  const id = row[columns.id ?? 'id'];
  if (typeof xid !== 'string' || typeof id !== 'string') {
    throw new Error('a commit-ordered row must carry its xid and id as strings: select both columns');
  }
  return { xid, id: id as Uuid };
}

/**
 * The feed's visibility horizon now: every transaction below it has ended, every one at or above it
 * may still write. Read it, then page with it (`FeedPage.horizon`): a page that comes back empty
 * proves that nothing below it matches, so `feedEndAt(horizon)` is a position that misses nothing.
 */
export async function readFeedHorizon(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ horizon: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`.execute(db);
  return rows[0]!.horizon;
}

const FEED_END_ID = '00000000-0000-0000-0000-000000000000' as Uuid;

/** The position just before everything a transaction at or above `horizon` writes: the feed's end, as of that horizon. */
export function feedEndAt(horizon: string): FeedPosition {
  return { xid: horizon, id: FEED_END_ID };
}

/** Whether a position is a feed's end (`feedEndAt`) rather than a row's: it names the whole server's horizon. */
export function isFeedEnd(position: FeedPosition): boolean {
  return position.id === FEED_END_ID;
}

export interface CommitOrderTable {
  /** The Postgres schema holding the table: the statements this module writes name the table with it, whatever the connection's search path. */
  schema: string;
  table: string;
  /** Columns the feed's index starts with, e.g. `['account_id']`: every read is scoped by them. */
  scope: readonly string[];
  columns?: FeedColumns;
}

/**
 * Migration step: adds the xid column (existing rows get the migrating transaction's id), a
 * trigger that sets it on every insert and update — so no write path can forget it — and the
 * feed's index `(scope…, xid, id)`.
 */
export async function addCommitOrder(db: Kysely<unknown>, target: CommitOrderTable): Promise<void> {
  const xid = target.columns?.xid ?? COMMIT_XID_COLUMN;
  const id = target.columns?.id ?? 'id';
  const table = sql.table(`${target.schema}.${target.table}`);
  const stampFunction = sql.raw(`${quoteIdent(target.schema)}.${quoteIdent(`stamp_${target.table}_${xid}`)}`);
  await sql`alter table ${table} add column ${sql.ref(xid)} xid8 not null default pg_current_xact_id()`.execute(db);
  await sql`
    create function ${stampFunction}() returns trigger language plpgsql as $$
    begin
      new.${sql.raw(quoteIdent(xid))} := pg_current_xact_id();
      return new;
    end
    $$`.execute(db);
  await sql`
    create trigger ${sql.raw(quoteIdent(`${target.table}_${xid}`))}
    before insert or update on ${table}
    for each row execute function ${stampFunction}()`.execute(db);
  const indexColumns = [...target.scope, xid, id].map(quoteIdent).join(', ');
  await sql`create index ${sql.raw(quoteIdent(feedIndexName(target)))} on ${table} (${sql.raw(indexColumns)})`.execute(db);
}

/** Undoes `addCommitOrder` (a migration's `down`). */
export async function dropCommitOrder(db: Kysely<unknown>, target: CommitOrderTable): Promise<void> {
  const xid = target.columns?.xid ?? COMMIT_XID_COLUMN;
  const table = sql.table(`${target.schema}.${target.table}`);
  await sql`drop trigger ${sql.raw(quoteIdent(`${target.table}_${xid}`))} on ${table}`.execute(db);
  await sql`drop function ${sql.raw(`${quoteIdent(target.schema)}.${quoteIdent(`stamp_${target.table}_${xid}`)}`)}()`.execute(db);
  await sql`drop index ${sql.raw(`${quoteIdent(target.schema)}.${quoteIdent(feedIndexName(target))}`)}`.execute(db);
  await sql`alter table ${table} drop column ${sql.ref(xid)}`.execute(db);
}

/** E.g. `order_submissions_account_id_commit_order`: named, like every index, after the table and its leading columns. */
function feedIndexName(target: Pick<CommitOrderTable, 'table' | 'scope'>): string {
  return [target.table, ...target.scope, 'commit_order'].join('_');
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
