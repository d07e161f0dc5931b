import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { expect } from 'vitest';

/**
 * Query-plan tests: what a repository function costs on a table of many accounts. The statements it
 * sends are recorded and explained exactly as sent, so the plans are those of the SQL that runs,
 * parameters included, not of a hand-written copy. SHOW_PLANS=1 prints them.
 */

/** One node of an `EXPLAIN (FORMAT JSON)` plan: the fields the assertions read. */
export type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Index Cond'?: string; 'Relation Name'?: string; Plans?: PlanNode[] };

/** The tree as a list, root first: an access to the table may sit at any depth of the plan. */
function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

export interface PlanExplainer<DB> {
  /** For seeding the table: without the services' 5 s statement timeout, which a bulk insert may exceed on a busy machine. */
  pool: pg.Pool;
  /** A handle on the schema that records every statement sent through it. */
  db: Kysely<DB>;
  /** Runs `run` on `db`, expects it to send exactly one statement, and returns the nodes of that statement's plan. */
  plansOf(run: (db: Kysely<DB>) => Promise<unknown>): Promise<PlanNode[]>;
  /**
   * As `plansOf`, but the generic plan: the one Postgres may keep for a prepared statement and run
   * whatever its values (shared/src/db.ts, `prepareStatement`).
   */
  genericPlansOf(run: (db: Kysely<DB>) => Promise<unknown>): Promise<PlanNode[]>;
  close(): Promise<void>;
}

/** A pool of its own on the test database at `url`, and a recording handle on `schema` over it. */
export function openPlanExplainer<DB>(url: string, schema: string): PlanExplainer<DB> {
  // The schema is also the connections' search path: a compiled statement is built once, by whichever
  // handle runs it first, so the one explained may name its tables unqualified, as the services do.
  const pool = new pg.Pool({ connectionString: url, max: 2, options: `-c search_path=${schema}` });
  // pool.end() resolves before its clients have closed; the forced drop may then cut them off.
  pool.on('error', () => undefined);
  let captured: CompiledQuery[] = [];
  const db = new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') captured.push(event.query);
    },
  }).withSchema(schema);

  const sentBy = async (run: (db: Kysely<DB>) => Promise<unknown>): Promise<CompiledQuery> => {
    captured = [];
    await run(db);
    expect(captured).toHaveLength(1);
    return captured[0]!;
  };
  const nodesOf = (result: pg.QueryResult): PlanNode[] => {
    const plan = (result.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
    if (process.env.SHOW_PLANS) console.log(JSON.stringify(plan, ['Node Type', 'Index Name', 'Relation Name', 'Index Cond', 'Filter', 'Plans'], 1));
    return planNodes(plan);
  };

  return {
    pool,
    db,
    async plansOf(run) {
      const query = await sentBy(run);
      const client = await pool.connect();
      try {
        // An index in the plan proves something only if the planner was free to scan the table instead.
        await client.query('set enable_seqscan = on');
        return nodesOf(await client.query(`explain (format json) ${query.sql}`, [...query.parameters]));
      } finally {
        client.release();
      }
    },
    async genericPlansOf(run) {
      const query = await sentBy(run);
      const client = await pool.connect();
      try {
        await client.query('set plan_cache_mode = force_generic_plan');
        await client.query(`prepare generic_plan_of_test as ${query.sql}`);
        // A generic plan is the same whatever the values, so nulls stand for them.
        const values = query.parameters.length > 0 ? `(${query.parameters.map(() => 'null').join(', ')})` : '';
        return nodesOf(await client.query(`explain (format json) execute generic_plan_of_test${values}`));
      } finally {
        await client.query('deallocate all');
        await client.query('reset plan_cache_mode');
        client.release();
      }
    },
    close: () => db.destroy(),
  };
}

/**
 * Asserts that every access to `table` goes through an index and that every index in the plan is
 * one of the table's account indexes (`<table>_account_…`, which lead with account_id): the query
 * then reads only the caller's entries, however many accounts the table holds. Returns the indexes
 * used, for tests that also expect a particular one.
 */
export function expectAccountIndexesOnly(nodes: PlanNode[], table: string): string[] {
  const tableAccess = nodes.filter((node) => node['Relation Name'] === table).map((node) => node['Node Type']);
  expect(tableAccess.length).toBeGreaterThan(0);
  for (const access of tableAccess) expect(['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']).toContain(access);
  const indexes = nodes.flatMap((node) => (node['Index Name'] ? [node['Index Name']] : []));
  expect(indexes.length).toBeGreaterThan(0);
  for (const index of indexes) expect(index).toMatch(new RegExp(`^${table}_account_`));
  return indexes;
}
