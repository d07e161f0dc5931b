import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KyselyPlugin } from 'kysely';
import { loadConfig } from '@ots/shared/config';
import { Decimal } from '@ots/shared/decimal';
import { newId, parseUuid, receiveId, type Uuid } from '@ots/shared/ids';
import type { KeysetPosition } from '@ots/shared/pagination';
import { createLogger } from '@ots/shared/logger';
import { expectAccountIndexesOnly, openPlanExplainer, type PlanExplainer, type PlanNode } from '@ots/shared/testing/plans';
import { testScope } from '@ots/shared/testing/scope';
import { cursorOf, positionAfter, type OrderFilter } from '../src/domain.ts';
import type { OrderSubmissionOrder } from '../src/generated/enums.ts';
import { fillData, newOrderRow } from '../src/mappers.ts';
import { submitOrder } from '../src/operations.ts';
import * as repository from '../src/repository.ts';
import type { OrderRow, OrdersDatabase, OrdersDb } from '../src/repository.ts';
import { listRequest } from '../src/resolvers.ts';
import { ordersService } from '../src/service.ts';
import { openSchemaDatabase, useSchemaDatabase, type SchemaTestDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';

/**
 * What the SQL costs: the plans of every listing (no sequential scan, only indexes that lead with
 * the account) and the number of queries the per-request loaders issue.
 */

const database = await useSchemaDatabase<OrdersDatabase>({ schema: SCHEMA, migrations }, { applicationName: 'orders-test', maxConnections: 30 });
const { db } = database;

const log = createLogger('orders-test', 'silent');

/** Counts the statements sent through a handle. */
function counting(handle: OrdersDb): { db: OrdersDb; count: () => number } {
  let statements = 0;
  const plugin: KyselyPlugin = {
    transformQuery: ({ node }) => {
      statements += 1;
      return node;
    },
    transformResult: async ({ result }) => result,
  };
  return { db: handle.withPlugin(plugin), count: () => statements };
}

function contextFor(accountId: string, handle: OrdersDb) {
  return ordersService.createContext(
    { caller: { accountId, apiKeyId: newId(), scopes: ['read'] }, assertion: 'unused', requestId: 'test', log },
    { service: 'orders', config: loadConfig({ NODE_ENV: 'test' }), db: handle, log },
  );
}

async function order(accountId: string, strategyId: Uuid | null, symbol = 'AAPL'): Promise<OrderRow> {
  const result = await submitOrder(
    { ...testScope(db, accountId), lookupStrategy: async () => 'ACTIVE' },
    { symbol, side: 'BUY', type: 'MARKET', quantity: new Decimal('1'), strategyId: strategyId === null ? null : receiveId(strategyId) },
  );
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

describe('per-request loaders', () => {
  it('resolve any number of OrderSubmission references in one query, a foreign id to null', async () => {
    const accountId = newId();
    const mine = await Promise.all(Array.from({ length: 30 }, () => order(accountId, null)));
    const foreign = await order(newId(), null);
    const counter = counting(db);
    const context = contextFor(accountId, counter.db);
    const loaded = await Promise.all([...mine, foreign].map((row) => context.orderById.load(row.id)));
    expect(counter.count()).toBe(1);
    expect(loaded.slice(0, 30).map((row) => row?.id)).toEqual(mine.map((row) => row.id));
    expect(loaded[30]).toBeNull();
  });

  it('list the orders of many strategies in one query per set of arguments, each page its own', async () => {
    const accountId = newId();
    const [s1, s2, s3, s4] = [newId(), newId(), newId(), newId()];
    const ofS1 = [];
    for (let i = 0; i < 3; i += 1) ofS1.push(await order(accountId, s1));
    const ofS2 = [await order(accountId, s2)];
    await order(accountId, null);
    await order(newId(), s3);
    const counter = counting(db);
    const context = contextFor(accountId, counter.db);
    const [page1, page2, page3, page4, all1] = await Promise.all([
      context.strategyOrders(s1, listRequest({ first: 2 }, context.listCursors)),
      context.strategyOrders(s2, listRequest({ first: 2 }, context.listCursors)),
      context.strategyOrders(s3, listRequest({ first: 2 }, context.listCursors)),
      context.strategyOrders(s4, listRequest({ first: 2 }, context.listCursors)),
      context.strategyOrders(s1, listRequest({ first: 10 }, context.listCursors)),
    ]);
    expect(counter.count()).toBe(2);
    expect(page1.nodes.map((row) => row.id)).toEqual([ofS1[2]!.id, ofS1[1]!.id]);
    expect(page1.pageInfo.hasNextPage).toBe(true);
    expect(page2.nodes.map((row) => row.id)).toEqual([ofS2[0]!.id]);
    expect(page2.pageInfo.hasNextPage).toBe(false);
    // s3's order is another account's: nothing to list, as for a strategy without orders.
    expect(page3.nodes).toEqual([]);
    expect(page4.nodes).toEqual([]);
    expect(all1.nodes).toHaveLength(3);

    const next = await context.strategyOrders(s1, listRequest({ first: 2, after: page1.pageInfo.endCursor }, context.listCursors));
    expect(next.nodes.map((row) => row.id)).toEqual([ofS1[0]!.id]);
  });
});

describe('query plans on a table of many accounts', () => {
  const accountId = '00000000-0000-4000-8000-000000000007';
  const strategyId = parseUuid('00000000-0000-4000-8000-000000000703')!;
  let explainer: PlanExplainer<OrdersDatabase>;

  beforeAll(async () => {
    explainer = openPlanExplainer<OrdersDatabase>(database.url, 'orders');
    // 60,000 orders of 300 accounts, 5 strategies and 20 symbols each, a third of them cancelled.
    await explainer.pool.query(`
      insert into orders.order_submissions
        (id, account_id, client_order_id, strategy_id, symbol, side, type, time_in_force, quantity,
         status, submitted_at, updated_at, cancelled_at)
      select
        gen_random_uuid(),
        ('00000000-0000-4000-8000-' || lpad(to_hex(g % 300), 12, '0'))::uuid,
        'c-' || g,
        ('00000000-0000-4000-8000-' || lpad(to_hex(g % 300), 10, '0') || lpad(to_hex(g % 5), 2, '0'))::uuid,
        'SYM' || (g % 20),
        case when g % 2 = 0 then 'BUY' else 'SELL' end,
        'MARKET', 'DAY', 1,
        case when g % 3 = 0 then 'CANCELLED' else 'SUBMITTED' end,
        timestamptz '2026-01-01' + g * interval '1 second',
        timestamptz '2026-01-01' + g * interval '1 second',
        case when g % 3 = 0 then timestamptz '2026-01-01' + g * interval '1 second' end
      from generate_series(1, 60000) as g
    `);
    await explainer.pool.query('analyze orders.order_submissions');
  });
  afterAll(async () => {
    await explainer.close();
  });

  const filters: [string, OrderFilter][] = [
    ['no filter', {}],
    ['status', { statuses: ['SUBMITTED', 'PARTIALLY_FILLED'] }],
    ['symbol', { symbol: 'SYM3' }],
    ['side', { side: 'SELL' }],
    ['strategyId', { strategyId }],
    ['clientOrderId', { clientOrderId: 'c-307' }],
    ['submittedAfter', { submittedAfter: new Date('2026-01-01T05:00:00Z') }],
    ['submittedBefore', { submittedBefore: new Date('2026-01-01T05:00:00Z') }],
    ['updatedAfter', { updatedAfter: new Date('2026-01-01T05:00:00Z') }],
    ['every filter', {
      statuses: ['SUBMITTED'],
      symbol: 'SYM7',
      side: 'SELL',
      strategyId,
      submittedAfter: new Date('2026-01-01T00:00:00Z'),
      submittedBefore: new Date('2026-01-02T00:00:00Z'),
      updatedAfter: new Date('2026-01-01T00:00:00Z'),
    }],
  ];
  const orderings: OrderSubmissionOrder[] = ['SUBMITTED_AT_DESC', 'UPDATED_AT_ASC'];

  for (const orderBy of orderings) {
    it.each(filters)(`listOrderSubmissions ${orderBy} by %s reads only the account's index entries`, async (_name, filter) => {
      const sync = contextFor(accountId, db).listCursors;
      const lastRow = { id: parseUuid('00000000-0000-4000-8000-000000000000')!, submitted_at: new Date('2026-01-01T10:00:00Z'), updated_at: new Date('2026-01-01T10:00:00Z') };
      const pages = [positionAfter(orderBy, null, sync), positionAfter(orderBy, cursorOf(orderBy, lastRow, sync), sync)].map(
        (position): repository.OrderPage =>
          position.orderBy === 'UPDATED_AT_ASC'
            ? { ...position, after: position.after as KeysetPosition | undefined, settled: new Date(), filter, limit: 51 }
            : { ...position, filter, limit: 51 },
      );
      for (const page of pages) {
        expectAccountIndexesOnly(await explainer.plansOf((handle) => repository.listOrders(handle, accountId, page)), 'order_submissions');
      }
    });
  }

  it('Strategy.orderSubmissions for a batch of strategies uses the account-and-strategy index', async () => {
    const strategies = [0, 1, 2, 3, 4].map((i) => parseUuid(`00000000-0000-4000-8000-0000000007${String(i).padStart(2, '0')}`)!);
    const nodes = await explainer.plansOf((handle) =>
      repository.listOrdersOfStrategies(handle, accountId, strategies, { filter: {}, orderBy: 'SUBMITTED_AT_DESC', after: undefined, limit: 51 }),
    );
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Seq Scan');
    expect(nodes.find((node) => node['Relation Name'] === 'order_submissions')?.['Index Name']).toBe(
      'order_submissions_account_strategy_submitted',
    );
  });

  it('Strategy.orderSubmissions UPDATED_AT_ASC for a batch of strategies reads only the account\'s index entries', async () => {
    const strategies = [0, 1, 2, 3, 4].map((i) => parseUuid(`00000000-0000-4000-8000-0000000007${String(i).padStart(2, '0')}`)!);
    const page: repository.OrderPage = { filter: {}, orderBy: 'UPDATED_AT_ASC', after: undefined, settled: new Date(), limit: 51 };
    expectAccountIndexesOnly(await explainer.plansOf((handle) => repository.listOrdersOfStrategies(handle, accountId, strategies, page)), 'order_submissions');
  });

  it('look-ups by id and clientOrderId use an index, never a scan', async () => {
    const byIds = await explainer.plansOf((handle) => repository.findOrders(handle, accountId, [newId(), newId()]));
    const byClientId = await explainer.plansOf((handle) => repository.findOrderByClientOrderId(handle, accountId, 'c-307'));
    for (const nodes of [byIds, byClientId]) {
      expect(nodes.map((node) => node['Node Type'])).not.toContain('Seq Scan');
      expect(nodes.some((node) => node['Index Name'])).toBe(true);
    }
  });
});

describe('the prepared writes on a table without statistics', () => {
  // The writes every order and fill runs are prepared (shared/src/db.ts): Postgres keeps one plan
  // for any values, made on the statistics of the moment, which in a new database are none. Each
  // must still find its order with every column of an index bound, never by reading the account.
  const accountId = '00000000-0000-4000-8000-0000000000c1';
  let fresh: SchemaTestDatabase<OrdersDatabase>;
  let explainer: PlanExplainer<OrdersDatabase>;
  let order: OrderRow;

  beforeAll(async () => {
    fresh = await openSchemaDatabase<OrdersDatabase>({ schema: SCHEMA, migrations }, { applicationName: 'orders-test', maxConnections: 30 });
    explainer = openPlanExplainer<OrdersDatabase>(fresh.url, 'orders');
    await explainer.pool.query('alter table orders.order_submissions set (autovacuum_enabled = false)');
    for (let index = 0; index < 50; index += 1) {
      const draft = { clientOrderId: null, strategyId: null, symbol: 'AAPL', side: 'BUY', type: 'MARKET', timeInForce: 'DAY', quantity: new Decimal(10), limitPrice: null, stopPrice: null } as const;
      const row = newOrderRow(accountId, draft);
      order = (await repository.insertOrder(fresh.db, row, { id: newId(), type: 'order_submission.submitted', data: {} }))!;
    }
  });
  afterAll(async () => {
    await explainer.close();
    await fresh.close();
  });

  /** Whether a scan of the orders seeks one order: by its primary key, or by account, version and id. */
  const seeksOneOrder = (node: PlanNode) =>
    node['Index Name'] === 'order_submissions_pkey' ||
    (node['Index Name'] === 'order_submissions_account_id_commit_order' && /account_id = .*commit_xid = .*id = /.test(node['Index Cond'] ?? ''));

  it('a cancel and a fill write their order by account, version and id', async () => {
    const event = { id: newId(), type: 'order_submission.cancelled' as const, data: {} };
    const writes: ((handle: OrdersDb) => Promise<unknown>)[] = [
      (handle) => repository.markCancelled(handle, accountId, order.id, order.commit_xid, event),
      (handle) => {
        const fill = { fillId: newId(), executionId: newId(), orderId: order.id, quantity: new Decimal(1), price: new Decimal(1), fee: new Decimal(0), liquidity: 'UNKNOWN', executedAt: null } as const;
        return repository.recordFillApplication(
          handle,
          accountId,
          fill,
          { status: 'PARTIALLY_FILLED', quantity: new Decimal(10), filledQuantity: new Decimal(1), fillNotional: new Decimal(1), cancelledAt: null, replacedAt: null },
          order.commit_xid,
          event,
          { fill: fillData(fill.fillId, order, fill) },
        );
      },
    ];
    for (const write of writes) {
      const scans = (await explainer.genericPlansOf(write)).filter((node) => node['Relation Name'] === 'order_submissions' && node['Node Type'].endsWith('Scan'));
      expect(scans.length).toBeGreaterThan(0);
      for (const scan of scans) expect(seeksOneOrder(scan), JSON.stringify(scan)).toBe(true);
    }
  });
});
