import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Uuid } from '@ots/shared/ids';
import { decodeKeysetCursor, encodeKeysetCursor } from '@ots/shared/pagination';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { expectAccountIndexesOnly, openPlanExplainer, type PlanExplainer } from '@ots/shared/testing/plans';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { FILLS_ORDERING, type FillFilter } from '../src/domain.ts';
import { findFillByExecutionId, listAppliedFills, type FillsDatabase } from '../src/repository.ts';

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
  database = await createTestDatabase({ migrate: { schema: SCHEMA, migrations } });
  explainer = openPlanExplainer<FillsDatabase>(database.url, SCHEMA);
  // 60,000 fills of 60 accounts: per account 100 orders, 5 strategies and 50 symbols (20 fills each);
  // about 1 % left pending by a release before issue 25.
  await explainer.pool.query(`
    insert into fills.fills
      (id, account_id, order_submission_id, strategy_id, symbol, side, execution_id,
       quantity, price, fee, liquidity, executed_at, recorded_at, status, applied_at)
    select
      gen_random_uuid(),
      ('00000000-0000-4000-8000-' || lpad(to_hex(g % 60), 12, '0'))::uuid,
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
