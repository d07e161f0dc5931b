import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it, inject } from 'vitest';
import { newId, type Uuid } from '@ots/shared/ids';
import { outboxRow } from '@ots/shared/outbox';
import { migrateService } from '@ots/shared/service';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';
import {
  deletePendingFill,
  findFillByExecutionId,
  findStalePendingFills,
  insertPendingFill,
  applyPendingFill,
  type FillsDatabase,
  type FillsDb,
  type NewPendingFill,
  type OrderDetails,
} from '../src/repository.ts';
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
  database = await createTestDatabase(inject('postgresUrl'));
  await migrateService({ schema: SCHEMA, migrations }, database.url);
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

const account = () => ({ accountId: newId(), apiKeyId: newId() });

type FillOverrides = Partial<NewPendingFill & OrderDetails>;

function pendingFill(owner: { accountId: string; apiKeyId: string }, overrides: FillOverrides = {}): NewPendingFill {
  const { strategyId: _strategyId, symbol: _symbol, side: _side, ...own } = overrides;
  return {
    id: newId(),
    ...owner,
    orderSubmissionId: newId(),
    executionId: `exec-${newId()}`,
    quantity: '1',
    price: '10',
    fee: '0',
    liquidity: 'UNKNOWN',
    executedAt: new Date('2026-03-01T10:00:00.000Z'),
    ...own,
  };
}

/** The order's details, as orders' verdict brings them when a fill is applied. */
function detailsOf(overrides: FillOverrides): OrderDetails {
  return { strategyId: overrides.strategyId ?? null, symbol: overrides.symbol ?? 'ACME', side: overrides.side ?? 'BUY' };
}

/** Settles a pending fill as a request does, with a `fill.recorded` event under the fill's id. */
function markPendingFillApplied(accountId: string, fillId: Uuid, details: OrderDetails) {
  const event = outboxRow({ id: fillId, accountId, type: 'fill.recorded', occurredAt: new Date(), data: { id: fillId } });
  return applyPendingFill(db, accountId, fillId, details, event);
}

async function eventsOf(fillId: string): Promise<number> {
  return (await db.selectFrom('outbox').select('id').where('id', '=', fillId as Uuid).execute()).length;
}

async function appliedFill(owner: { accountId: string; apiKeyId: string }, overrides: FillOverrides = {}) {
  const fill = await insertPendingFill(db, pendingFill(owner, overrides));
  return (await markPendingFillApplied(owner.accountId, fill!.id, detailsOf(overrides)))!;
}

describe('pending fills', () => {
  it('stores one fill per execution id and account, whatever the race', async () => {
    const owner = account();
    const executionId = 'exec-race';
    const results = await Promise.all(Array.from({ length: 10 }, () => insertPendingFill(db, pendingFill(owner, { executionId }))));
    expect(results.filter((row) => row !== undefined)).toHaveLength(1);
    expect(await insertPendingFill(db, pendingFill(account(), { executionId }))).toBeDefined();
  });

  it('defaults the execution time to the receipt time', async () => {
    const row = await insertPendingFill(db, pendingFill(account(), { executedAt: null }));
    expect(row?.executed_at.getTime()).toBe(row?.recorded_at.getTime());
  });

  it('marks applied idempotently with one event, and never drops an applied fill', async () => {
    const owner = account();
    const fill = (await insertPendingFill(db, pendingFill(owner)))!;
    const first = await markPendingFillApplied(owner.accountId, fill.id, detailsOf({}));
    expect(await eventsOf(fill.id)).toBe(1);
    // A second settlement of the same fill changes nothing, writes no second event, and says so.
    const again = await markPendingFillApplied(owner.accountId, fill.id, detailsOf({}));
    expect(await eventsOf(fill.id)).toBe(1);
    expect(first).toMatchObject({ symbol: 'ACME', side: 'BUY', strategy_id: null });
    expect(first?.status).toBe('APPLIED');
    expect(again).toBeUndefined();
    expect((await findFillByExecutionId(db, owner.accountId, fill.execution_id))?.applied_at).toEqual(first?.applied_at);
    await deletePendingFill(db, owner.accountId, fill.id);
    expect((await findFillByExecutionId(db, owner.accountId, fill.execution_id))?.status).toBe('APPLIED');
  });

  it("touches no other account's fill", async () => {
    const owner = account();
    const fill = (await insertPendingFill(db, pendingFill(owner)))!;
    expect(await markPendingFillApplied(newId(), fill.id, detailsOf({}))).toBeUndefined();
    expect(await eventsOf(fill.id)).toBe(0);
    await deletePendingFill(db, newId(), fill.id);
    expect((await findFillByExecutionId(db, owner.accountId, fill.execution_id))?.status).toBe('PENDING');
    await deletePendingFill(db, owner.accountId, fill.id);
    expect(await findFillByExecutionId(db, owner.accountId, fill.execution_id)).toBeUndefined();
  });

  it('hands the sweeper only pending fills older than the minimum age', async () => {
    const owner = account();
    const pending = (await insertPendingFill(db, pendingFill(owner)))!;
    await appliedFill(owner);
    expect((await findStalePendingFills(db, 60_000, 1_000)).map((row) => row.id)).not.toContain(pending.id);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await findStalePendingFills(db, 10, 1_000)).map((row) => row.id)).toContain(pending.id);
    expect((await findStalePendingFills(db, 10, 1_000)).every((row) => row.status === 'PENDING')).toBe(true);
  });
});

describe('per-request loaders', () => {
  it('load the fills of many orders in one query, oldest first, applied and own only', async () => {
    const owner = account();
    const [orderA, orderB] = [newId(), newId()];
    const late = await appliedFill(owner, { orderSubmissionId: orderA, executedAt: new Date('2026-03-01T10:00:02.000Z') });
    const early = await appliedFill(owner, { orderSubmissionId: orderA, executedAt: new Date('2026-03-01T10:00:01.000Z') });
    const other = await appliedFill(owner, { orderSubmissionId: orderB });
    await insertPendingFill(db, pendingFill(owner, { orderSubmissionId: orderB }));
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

  it('load fills by id in one query, null for pending, foreign and malformed ids', async () => {
    const owner = account();
    const mine = await appliedFill(owner);
    const pending = (await insertPendingFill(db, pendingFill(owner)))!;
    const foreign = await appliedFill(account());

    // Through the resolver, which parses each id: a malformed one never joins the batch.
    const context = contextWith(createLoaders(db, owner.accountId));
    statements = [];
    const rows = (await Promise.all(
      [mine.id, pending.id, foreign.id, 'nope', mine.id.toUpperCase()].map((id) => fillResolver(undefined, { id }, context, undefined)),
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
