import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrateService } from '@ots/shared/service';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { findFillByExecutionId, listAppliedFills, type FillFilter, type FillsDatabase, type FillsDb } from '../src/repository.ts';

/**
 * What the listFills SQL costs: the plan of every filter, with and without a cursor, on a table of
 * many accounts (no sequential scan, only indexes that lead with the account, and the index that
 * serves the filter). SHOW_PLANS=1 prints the plans.
 */

type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; Plans?: PlanNode[] };

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

const accountId = '00000000-0000-4000-8000-000000000007';
const strategyId = '00000000-0000-4000-8002-000000000703';
const orderSubmissionId = '00000000-0000-4000-8001-00000007002a';

let database: TestDatabase;
let pool: pg.Pool;
let explainer: FillsDb;
let captured: CompiledQuery[] = [];

beforeAll(async () => {
  database = await createTestDatabase(inject('postgresUrl'));
  await migrateService({ schema: SCHEMA, migrations }, database.url);
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  // pool.end() resolves before its clients have closed; the forced drop may then cut them off.
  pool.on('error', () => undefined);
  // 60,000 fills of 60 accounts: per account 100 orders, 5 strategies and 50 symbols (20 fills each);
  // about 1 % pending.
  await pool.query(`
    insert into fills.fills
      (id, account_id, api_key_id, order_submission_id, strategy_id, symbol, side, execution_id,
       quantity, price, fee, liquidity, executed_at, recorded_at, status, applied_at)
    select
      gen_random_uuid(),
      ('00000000-0000-4000-8000-' || lpad(to_hex(g % 60), 12, '0'))::uuid,
      '00000000-0000-4000-8000-000000000000'::uuid,
      ('00000000-0000-4000-8001-' || lpad(to_hex(g % 60), 8, '0') || lpad(to_hex((g / 60) % 100), 4, '0'))::uuid,
      ('00000000-0000-4000-8002-' || lpad(to_hex(g % 60), 10, '0') || lpad(to_hex((g / 60) % 5), 2, '0'))::uuid,
      'SYM' || ((g / 60) % 50),
      case when g % 2 = 0 then 'BUY' else 'SELL' end,
      'exec-' || g,
      1, 10, 0, 'UNKNOWN',
      timestamptz '2026-01-01' + g * interval '1 second',
      timestamptz '2026-01-01' + g * interval '1 second',
      case when g % 97 = 0 then 'PENDING' else 'APPLIED' end,
      case when g % 97 = 0 then null else timestamptz '2026-01-01' + g * interval '1 second' end
    from generate_series(1, 60000) as g
  `);
  await pool.query('analyze fills.fills');
  // A handle of its own that records the statements the repository sends, to explain them as sent.
  explainer = new Kysely<FillsDatabase>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') captured.push(event.query);
    },
  }).withSchema(SCHEMA);
});

afterAll(async () => {
  await explainer?.destroy();
  await database?.drop();
});

async function plansOf(run: (handle: FillsDb) => Promise<unknown>): Promise<PlanNode[]> {
  captured = [];
  await run(explainer);
  expect(captured).toHaveLength(1);
  const query = captured[0]!;
  const client = await pool.connect();
  try {
    const result = await client.query(`explain (format json) ${query.sql}`, [...query.parameters]);
    const plan = (result.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
    if (process.env.SHOW_PLANS) console.log(JSON.stringify(plan, ['Node Type', 'Index Name', 'Relation Name', 'Index Cond', 'Filter', 'Plans'], 1));
    return planNodes(plan);
  } finally {
    client.release();
  }
}

/** Every access to the table goes through an index, and every index used leads with account_id. */
function indexesUsed(nodes: PlanNode[]): string[] {
  const tableAccess = nodes.filter((node) => node['Relation Name'] === 'fills').map((node) => node['Node Type']);
  expect(tableAccess.length).toBeGreaterThan(0);
  for (const access of tableAccess) expect(['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']).toContain(access);
  const indexes = nodes.flatMap((node) => (node['Index Name'] ? [node['Index Name']] : []));
  expect(indexes.length).toBeGreaterThan(0);
  for (const index of indexes) expect(index).toMatch(/^fills_account_/);
  return indexes;
}

describe('listFills query plans on a table of many accounts', () => {
  const after = { executedAt: new Date('2026-01-01T10:00:00Z'), id: '00000000-0000-4000-8000-000000000000' };

  const filters: [string, FillFilter, string | undefined][] = [
    ['no filter', {}, 'fills_account_executed'],
    ['orderSubmissionId', { orderSubmissionId }, 'fills_account_order_executed'],
    ['strategyId', { strategyId }, 'fills_account_strategy_executed'],
    ['symbol', { symbol: 'SYM7' }, 'fills_account_symbol_executed'],
    ['executedAfter', { executedAfter: new Date('2026-01-01T10:00:00Z') }, undefined],
    ['executedBefore', { executedBefore: new Date('2026-01-01T10:00:00Z') }, undefined],
    ['every filter', {
      orderSubmissionId,
      strategyId,
      symbol: 'SYM7',
      executedAfter: new Date('2026-01-01T00:00:00Z'),
      executedBefore: new Date('2026-01-02T00:00:00Z'),
    }, undefined],
  ];

  it.each(filters)('by %s reads only the account\'s index entries, through the index that serves the filter', async (_name, filter, expected) => {
    for (const keyset of [undefined, after]) {
      const indexes = indexesUsed(await plansOf((handle) => listAppliedFills(handle, accountId, filter, 51, keyset)));
      if (expected) expect(indexes, JSON.stringify({ filter, keyset })).toEqual([expected]);
    }
  });

  it('answers a symbol filter from the symbol index, which holds the page in order', async () => {
    const rows = await listAppliedFills(explainer, accountId, { symbol: 'SYM7' }, 51, undefined);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.symbol === 'SYM7' && row.status === 'APPLIED' && row.account_id === accountId)).toBe(true);
    const times = rows.map((row) => row.executed_at.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('looks an execution id up through the unique index', async () => {
    const nodes = await plansOf((handle) => findFillByExecutionId(handle, accountId, 'exec-307'));
    expect(indexesUsed(nodes)).toEqual(['fills_account_execution_id']);
  });
});
