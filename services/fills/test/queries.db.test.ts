import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Uuid } from '@ots/shared/ids';
import { decodeKeysetCursor, encodeKeysetCursor } from '@ots/shared/pagination';
import { migrateService } from '@ots/shared/service';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { expectAccountIndexesOnly, openPlanExplainer, type PlanExplainer } from '@ots/shared/testing/plans';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { outboxRow } from '@ots/shared/outbox';
import { applyPendingFill, deletePendingFill, findFillByExecutionId, listAppliedFills, type FillFilter, type FillsDatabase, type FillsDb } from '../src/repository.ts';
import { FILLS_ORDERING } from '../src/resolvers.ts';

/**
 * What the listFills SQL costs: the plan of every filter, with and without a cursor, on a table of
 * many accounts (no sequential scan, only indexes that lead with the account, and the index that
 * serves the filter). SHOW_PLANS=1 prints the plans.
 */

const accountId = '00000000-0000-4000-8000-000000000007';
const strategyId = '00000000-0000-4000-8002-000000000703' as Uuid;
const orderSubmissionId = '00000000-0000-4000-8001-00000007002a' as Uuid;

let database: TestDatabase;
let explainer: PlanExplainer<FillsDatabase>;

beforeAll(async () => {
  database = await createTestDatabase(inject('postgresUrl'));
  await migrateService({ schema: SCHEMA, migrations }, database.url);
  explainer = openPlanExplainer<FillsDatabase>(database.url, SCHEMA);
  // 60,000 fills of 60 accounts: per account 100 orders, 5 strategies and 50 symbols (20 fills each);
  // about 1 % pending.
  await explainer.pool.query(`
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
  await explainer.pool.query('analyze fills.fills');
});

afterAll(async () => {
  await explainer?.close();
  await database?.drop();
});

describe('listFills query plans on a table of many accounts', () => {
  const after = decodeKeysetCursor(FILLS_ORDERING, encodeKeysetCursor(FILLS_ORDERING, { at: new Date('2026-01-01T10:00:00Z'), id: '00000000-0000-4000-8000-000000000000' }));

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
      const indexes = expectAccountIndexesOnly(await explainer.plansOf((handle) => listAppliedFills(handle, accountId, filter, { after: keyset, limit: 51 })), 'fills');
      if (expected) expect(indexes, JSON.stringify({ filter, keyset })).toEqual([expected]);
    }
  });

  it('answers a symbol filter from the symbol index, which holds the page in order', async () => {
    const rows = await listAppliedFills(explainer.db, accountId, { symbol: 'SYM7' }, { after: undefined, limit: 51 });
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.symbol === 'SYM7' && row.status === 'APPLIED' && row.account_id === accountId)).toBe(true);
    const times = rows.map((row) => row.executed_at.getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it('looks an execution id up through the unique index', async () => {
    const nodes = await explainer.plansOf((handle) => findFillByExecutionId(handle, accountId, 'exec-307'));
    expect(expectAccountIndexesOnly(nodes, 'fills')).toEqual(['fills_account_execution_id']);
  });
});

describe('settling a pending fill', () => {
  // Settling names the fill by account and id, and only a PENDING one. Before the table's first
  // ANALYZE (a new database, a burst of fills in its first minute) the planner took the pending
  // fills' partial index when it was keyed by (account_id, recorded_at): it read every entry of the
  // account, and the index keeps one for every fill settled since the last vacuum, so each settlement
  // of a burst read the whole burst. Keyed by (account_id, id), the fill is one seek away.
  let fresh: TestDatabase;
  let freshExplainer: PlanExplainer<FillsDatabase>;
  const burstAccount = '00000000-0000-4000-8000-0000000000b1';

  beforeAll(async () => {
    fresh = await createTestDatabase(inject('postgresUrl'));
    await migrateService({ schema: SCHEMA, migrations }, fresh.url);
    freshExplainer = openPlanExplainer<FillsDatabase>(fresh.url, SCHEMA);
    // No statistics, as in a new database: autovacuum must not analyze the table while the test runs.
    await freshExplainer.pool.query('alter table fills.fills set (autovacuum_enabled = false)');
    await freshExplainer.pool.query(`
      insert into fills.fills (id, account_id, api_key_id, order_submission_id, execution_id, quantity, price, fee, liquidity, executed_at, status)
      select gen_random_uuid(), $1, gen_random_uuid(), gen_random_uuid(), 'burst-' || g, 1, 10, 0, 'UNKNOWN', now(), 'PENDING'
      from generate_series(1, 2000) as g`, [burstAccount]);
    await freshExplainer.pool.query(`update fills.fills set status = 'APPLIED', symbol = 'SYM1', side = 'BUY', applied_at = now() where execution_id <> 'burst-2000'`);
  });

  afterAll(async () => {
    await freshExplainer?.close();
    await fresh?.drop();
  });

  it('finds the fill by its id, whether it marks it applied or drops it', async () => {
    const { rows } = await freshExplainer.pool.query<{ id: Uuid }>(`select id from fills.fills where execution_id = 'burst-2000'`);
    const fillId = rows[0]!.id;
    const event = outboxRow({ id: fillId, accountId: burstAccount, type: 'fill.recorded', occurredAt: new Date(), data: {} });
    const settlements: ((handle: FillsDb) => Promise<unknown>)[] = [
      (handle) => applyPendingFill(handle, burstAccount, fillId, { strategyId: null, symbol: 'SYM1', side: 'BUY' }, event),
      (handle) => deletePendingFill(handle, burstAccount, fillId),
    ];
    for (const settle of settlements) {
      const scans = (await freshExplainer.plansOf(settle)).filter((node) => node['Relation Name'] === 'fills' && node['Node Type'].endsWith('Scan'));
      expect(scans.map((node) => [node['Node Type'], node['Index Cond']])).toEqual([['Index Scan', expect.stringMatching(/\bid = /)]]);
    }
  });

  it('marks it applied by its id in the plan Postgres keeps for the prepared statement, whatever the values', async () => {
    // The settlement is prepared (shared/src/db.ts); its status condition is a literal so that this
    // plan, made without the values, may use the pending fills' index.
    const fillId = '00000000-0000-4000-8000-0000000000f1' as Uuid;
    const event = outboxRow({ id: fillId, accountId: burstAccount, type: 'fill.recorded', occurredAt: new Date(), data: {} });
    const nodes = await freshExplainer.genericPlansOf((handle) => applyPendingFill(handle, burstAccount, fillId, { strategyId: null, symbol: 'SYM1', side: 'BUY' }, event));
    const scans = nodes.filter((node) => node['Relation Name'] === 'fills' && node['Node Type'].endsWith('Scan'));
    expect(scans.map((node) => [node['Index Name'], node['Index Cond']])).toEqual([['fills_account_pending_id', expect.stringMatching(/account_id = \$\d+\) AND \(id = \$\d+/)]]);
  });
});
