import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Decimal } from '@ots/shared/decimal';
import { newId } from '@ots/shared/ids';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { findFillByExecutionId, keepFills, type FillsDatabase, type FillsDb, type KeptFill } from '../src/repository.ts';
import { createLoaders, type FillsContext } from '../src/context.ts';
import { resolvers } from '../src/resolvers.ts';

/** Repository and loader behaviour against real Postgres, counting the statements each use sends. */

/** A resolver of the map, called as Apollo calls it (the loaders are all these read of the context). */
type Called<Args> = (parent: unknown, args: Args, context: FillsContext, info: unknown) => Promise<unknown>;
const fillResolver = resolvers.Query!.fill as Called<{ id: string }>;
const fillsOfOrderResolver = resolvers.OrderSubmission!.fills as Called<Record<string, never>>;
const contextWith = (loaders: FillsContext['loaders']) => ({ loaders }) as FillsContext;

let database: TestDatabase;
let db: FillsDb;
let statements: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase({ migrate: { schema: SCHEMA, migrations } });
  const pool = new pg.Pool({ connectionString: database.url, max: 12 });
  // pool.end() resolves before its clients have closed; the forced drop of the database may then cut
  // them off, which without a listener is an uncaught error.
  pool.on('error', () => undefined);
  db = new Kysely<FillsDatabase>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') statements.push(event.query.sql);
    },
  }).withSchema(SCHEMA);
});

afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

beforeEach(() => {
  statements = [];
});

const account = () => ({ accountId: newId() });

/** A fill as orders records it and fills keeps it. */
function recordedFill(owner: { accountId: string }, overrides: Partial<KeptFill> = {}): KeptFill {
  return {
    id: newId(),
    ...owner,
    orderSubmissionId: newId(),
    strategyId: null,
    symbol: 'ACME',
    side: 'BUY',
    executionId: `exec-${newId()}`,
    quantity: '1',
    price: '10',
    fee: '0',
    liquidity: 'UNKNOWN',
    executedAt: new Date('2026-03-01T10:00:00.000Z'),
    recordedAt: new Date('2026-03-01T10:00:00.050Z'),
    ...overrides,
  };
}

async function appliedFill(owner: { accountId: string }, overrides: Partial<KeptFill> = {}) {
  const fill = recordedFill(owner, overrides);
  await keepFills(db, [fill]);
  return fill;
}

describe('kept fills', () => {
  it('keeps a fill once, whoever brings it and however often: the request, a retry, the recovery path', async () => {
    const owner = account();
    const fill = recordedFill(owner, { strategyId: newId(), symbol: 'GLOBEX', side: 'SELL', fee: '0.25', liquidity: 'MAKER' });
    await Promise.all(Array.from({ length: 10 }, () => keepFills(db, [fill])));
    const rows = await db.selectFrom('fills').selectAll().where('account_id', '=', owner.accountId).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: fill.id,
      order_submission_id: fill.orderSubmissionId,
      strategy_id: fill.strategyId,
      symbol: 'GLOBEX',
      side: 'SELL',
      execution_id: fill.executionId,
      liquidity: 'MAKER',
      executed_at: fill.executedAt,
      recorded_at: fill.recordedAt,
      applied_at: fill.recordedAt,
      status: 'APPLIED',
    });
    expect(new Decimal(rows[0]!.fee).eq('0.25')).toBe(true);
    expect((await findFillByExecutionId(db, owner.accountId, fill.executionId))?.id).toBe(fill.id);
  });

  it('keeps a batch of fills of many accounts in one statement', async () => {
    const fills = Array.from({ length: 5 }, () => recordedFill(account()));
    statements = [];
    await keepFills(db, fills);
    expect(statements).toHaveLength(1);
    for (const fill of fills) expect((await findFillByExecutionId(db, fill.accountId, fill.executionId))?.id).toBe(fill.id);
    expect(await findFillByExecutionId(db, newId(), fills[0]!.executionId)).toBeUndefined();
  });
});

describe('per-request loaders', () => {
  it('load the fills of many orders in one query, oldest first, applied and own only', async () => {
    const owner = account();
    const [orderA, orderB] = [newId(), newId()];
    const late = await appliedFill(owner, { orderSubmissionId: orderA, executedAt: new Date('2026-03-01T10:00:02.000Z') });
    const early = await appliedFill(owner, { orderSubmissionId: orderA, executedAt: new Date('2026-03-01T10:00:01.000Z') });
    const other = await appliedFill(owner, { orderSubmissionId: orderB });
    const stranger = account();
    await appliedFill(stranger, { orderSubmissionId: orderA });

    const loaders = createLoaders(db, owner.accountId);
    statements = [];
    const groups = await Promise.all([orderA, orderB, newId()].map((id) => loaders.appliedFillsByOrder.load(id)));
    expect(statements).toHaveLength(1);
    expect(groups.map((group) => group.map((fill) => fill.id))).toEqual([[early.id, late.id], [other.id], []]);

    // Through the resolver, which parses the order's id: a malformed one reaches no query.
    statements = [];
    const resolved = (await Promise.all(
      [orderA, 'not-a-uuid'].map((id) => fillsOfOrderResolver({ id }, {}, contextWith(createLoaders(db, owner.accountId)), undefined)),
    )) as { id: string }[][];
    expect(statements).toHaveLength(1);
    expect(resolved.map((group) => group.map((fill) => fill.id))).toEqual([[early.id, late.id], []]);
  });

  it('load fills by id in one query, null for missing, foreign and malformed ids', async () => {
    const owner = account();
    const mine = await appliedFill(owner);
    const missing = { id: newId() };
    const foreign = await appliedFill(account());

    // Through the resolver, which parses each id: a malformed one never joins the batch.
    const context = contextWith(createLoaders(db, owner.accountId));
    statements = [];
    const rows = (await Promise.all(
      [mine.id, missing.id, foreign.id, 'nope', mine.id.toUpperCase()].map((id) => fillResolver(undefined, { id }, context, undefined)),
    )) as ({ id: string } | null)[];
    expect(statements).toHaveLength(1);
    expect(rows.map((row) => row?.id ?? null)).toEqual([mine.id, null, null, null, mine.id]);
  });

  it("load many strategies' position fills in one query", async () => {
    const owner = account();
    const [first, second] = [newId(), newId()];
    await appliedFill(owner, { strategyId: first, symbol: 'AAA' });
    await appliedFill(owner, { strategyId: second, symbol: 'BBB' });
    await appliedFill(owner, { strategyId: null, symbol: 'CCC' });

    const loaders = createLoaders(db, owner.accountId);
    statements = [];
    const groups = await Promise.all([first, second].map((id) => loaders.appliedFillsByStrategy.load(id)));
    expect(statements).toHaveLength(1);
    expect(groups.map((group) => group.map((fill) => fill.symbol))).toEqual([['AAA'], ['BBB']]);
  });
});
