import { Kysely, Migrator, PostgresDialect, sql, type Migration, type PostgresCursor, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import pg from 'pg';
import { observePool } from './metrics.ts';

export interface DatabaseOptions {
  url: string;
  /** The Postgres schema the service owns: the only one its connections see tables in (`search_path`). */
  schema: string;
  applicationName: string;
  maxConnections?: number;
  /** How long one statement may run, in ms (0: no limit); 5 s unless said. */
  statementTimeoutMs?: number;
}

/**
 * One pool per service, bound to the service's own schema. Statement and idle-transaction timeouts
 * keep a stuck query from holding row locks (and a request) forever.
 *
 * The schema is the connections' `search_path` rather than Kysely's `withSchema`: the plugin rewrites
 * every query's whole tree to qualify its tables, a cost paid on every statement (the orders README,
 * Performance); a search path costs nothing per query, and a connection that cannot name another
 * service's tables unqualified keeps each service in its own.
 */
export function createDatabase<DB>(options: DatabaseOptions): Kysely<DB> {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.maxConnections ?? 10,
    application_name: options.applicationName,
    idle_in_transaction_session_timeout: 10_000,
    connectionTimeoutMillis: 5_000,
    // In the startup options rather than pg's `statement_timeout`, which pg leaves out when it is 0:
    // the role's or the database's own limit would then apply.
    options: `-c search_path=${quoteIdentifier(options.schema)} -c statement_timeout=${options.statementTimeoutMs ?? 5_000}`,
  });
  // A connection lost while idle, or while checked out between two queries, must not crash the
  // process: the pool replaces it, and the query that used it fails on its own.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  observePool(options.applicationName, pool);
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool: sendingPreparedStatementsByName(pool) }) });
}

/** The SQL texts registered with `prepareStatement`, and the name each is sent under. */
const statementNames = new Map<string, string>();

/**
 * Has every connection send `sql` as a named statement: Postgres parses, analyses and plans it once
 * per connection, and then, once it has judged a plan that ignores the values no dearer than one
 * made for them (after five runs), reuses that generic plan. For the statements that every write
 * runs, parsing and planning anew was much of Postgres's time (a CTE is planned as a query of its
 * own; the orders README, Performance). A registered statement must therefore be one whose generic
 * plan is as good as any: an index that holds all of its key in the WHERE clause, with constants written as literals
 * (a partial index is only usable when its condition is in the SQL); the repositories' plan tests
 * show each generic plan on a table without statistics. It must also name its result columns: a
 * `*` would take a column added later, which Postgres refuses for a statement it has prepared.
 */
export function prepareStatement(sql: string): void {
  if (!statementNames.has(sql)) statementNames.set(sql, `ots_${statementNames.size + 1}`);
}

/**
 * The pool as Kysely reaches it, its clients sending registered statements by name (pg parses one
 * once per connection and binds it after).
 */
function sendingPreparedStatementsByName(pool: pg.Pool): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const naming = (client: pg.PoolClient): PostgresPoolClient => {
    function query<R>(text: string, values: readonly unknown[]): Promise<PostgresQueryResult<R>>;
    function query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
    function query<R>(text: string | PostgresCursor<R>, values: readonly unknown[] = []): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
      if (typeof text !== 'string') throw new Error('this pool streams no rows: its dialect has no cursor');
      const name = statementNames.get(text);
      // pg reads the values without changing them.
      const parameters = values as unknown[];
      const result = name === undefined ? client.query(text, parameters) : client.query({ name, text, values: parameters });
      return result as Promise<PostgresQueryResult<R>>;
    }
    return { query, release: () => client.release() };
  };
  return {
    connect: async () => {
      const client = await pool.connect();
      let named = clients.get(client);
      if (!named) clients.set(client, (named = naming(client)));
      return named;
    },
    end: () => pool.end(),
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export interface DatabaseProbe {
  /** Whether the database answers `select 1` within 2 s. */
  reachable(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * `/readyz`'s look at the database, on a connection of its own: through the request pool it waited
 * behind the requests whenever a burst held all of the pool's connections, past an orchestrator's
 * probe time-out (3 s in deploy/kubernetes), and every busy replica was taken out of service at once
 * while the database was well. Its 2 s bounds stay inside that time-out.
 */
export function databaseProbe(url: string, applicationName: string): DatabaseProbe {
  const pool = new pg.Pool({ connectionString: url, max: 1, application_name: `${applicationName} readiness`, connectionTimeoutMillis: 2_000, query_timeout: 2_000 });
  pool.on('error', () => undefined);
  return {
    reachable: async () => {
      try {
        await pool.query('select 1');
        return true;
      } catch {
        return false;
      }
    },
    // Once: a server closed twice (a test's stop, then its clean-up) closes its probe once.
    close: async () => {
      if (!pool.ended) await pool.end();
    },
  };
}

/**
 * An index built after the migrations with CREATE INDEX CONCURRENTLY, which lets writes to its table
 * go on: a plain CREATE INDEX in a migration holds the table against inserts for the whole build (on
 * `events`, every service's new events and the ingest behind them), and Kysely runs all pending
 * migrations in one transaction, so whatever an earlier one locked stays locked until it ends too.
 */
export interface OnlineIndex {
  name: string;
  table: string;
  columns: readonly string[];
}

/** A service's schema: its migrations, then the indexes built beside live traffic. */
export interface SchemaMigrations {
  schema: string;
  migrations: Record<string, Migration>;
  onlineIndexes?: readonly OnlineIndex[];
}

/**
 * Creates the service's schema if needed and applies its migrations; the migration table lives in that
 * schema too. Without the requests' 5 s statement limit: DDL on a table that holds data (a rewrite,
 * an index, a constraint's check) may take longer, and so may the wait for Kysely's migration lock
 * while another runner (a replica's, another service's on the same server) holds it; a 5 s limit
 * failed such a migration on every retry of its Job. The Job's own deadline is what bounds it.
 */
export async function migrateSchema(url: string, { schema, migrations, onlineIndexes = [] }: SchemaMigrations): Promise<void> {
  const db = createDatabase<unknown>({ url, schema, applicationName: `${schema}-migrate`, maxConnections: 1, statementTimeoutMs: 0 });
  try {
    try {
      await sql`create schema if not exists ${sql.id(schema)}`.execute(db);
    } catch (error) {
      // Two first runners at once: `if not exists` does not stop the second from failing on the catalog's unique index.
      if ((error as { code?: string }).code !== '23505') throw error;
    }
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => migrations },
      migrationTableSchema: schema,
    });
    const { error, results } = await migrator.migrateToLatest();
    const failed = results?.find((result) => result.status === 'Error');
    if (error || failed) {
      throw new Error(`migration of schema ${schema} failed${failed ? ` at ${failed.migrationName}` : ''}: ${String(error)}`);
    }
    if (onlineIndexes.length > 0) await buildOnlineIndexes(db, schema, onlineIndexes);
  } finally {
    await db.destroy();
  }
}

const ONLINE_INDEX_LOCK_RETRY_MS = 500;

/**
 * Builds each index that is missing or invalid, one runner at a time (a session lock: CONCURRENTLY
 * cannot run in a transaction, so Kysely's migration lock cannot hold it). A build cut short (a Job
 * killed mid-way) leaves an invalid index that `if not exists` would keep as it is: it is dropped and
 * built again.
 */
async function buildOnlineIndexes(db: Kysely<unknown>, schema: string, indexes: readonly OnlineIndex[]): Promise<void> {
  await db.connection().execute(async (session) => {
    const lockKey = `${schema}.online-indexes`;
    // Quick tries, not a wait in pg_advisory_lock: a statement waiting for the lock holds a snapshot,
    // and CREATE INDEX CONCURRENTLY waits for every older snapshot before it ends, so the build of the
    // runner holding the lock would wait for this one, which waits for it (a deadlock that fails it).
    while (!(await sql<{ locked: boolean }>`select pg_try_advisory_lock(hashtext(${lockKey})) as locked`.execute(session)).rows[0]!.locked) {
      await new Promise((resolve) => setTimeout(resolve, ONLINE_INDEX_LOCK_RETRY_MS));
    }
    try {
      for (const index of indexes) {
        const { rows } = await sql<{ valid: boolean }>`
          select i.indisvalid as valid from pg_index i
          join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = ${schema} and c.relname = ${index.name}`.execute(session);
        if (rows[0]?.valid) continue;
        if (rows[0]) await sql`drop index concurrently ${sql.id(schema, index.name)}`.execute(session);
        await sql`create index concurrently ${sql.id(index.name)} on ${sql.id(schema, index.table)} (${sql.join(index.columns.map((column) => sql.id(column)))})`.execute(session);
      }
    } finally {
      // A lost connection releases the lock by itself, and its error is the one to report.
      await sql`select pg_advisory_unlock(hashtext(${lockKey}))`.execute(session).catch(() => undefined);
    }
  });
}
