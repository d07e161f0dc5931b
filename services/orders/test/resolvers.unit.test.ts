import { describe, expect, it } from 'vitest';
import type { GraphQLResolveInfo } from 'graphql';
import { Decimal } from '@ots/shared/decimal';
import { newId } from '@ots/shared/ids';
import { createLogger } from '@ots/shared/logger';
import { testScope } from '@ots/shared/testing/scope';
import type { OrdersContext } from '../src/context.ts';
import type { StrategyStatus } from '../src/domain.ts';
import { strategyOrdersLoaders } from '../src/operations.ts';
import type { OrdersDb } from '../src/repository.ts';
import { resolvers } from '../src/resolvers.ts';

/**
 * The resolver edge without a database: an id that is not a UUID must be answered there, as no
 * order or no strategy, and never reach a query. The context's database and order loader fail the
 * test if anything touches them.
 */

function untouched(name: string): never {
  throw new Error(`${name} was used: an id that is not a UUID reached a query`);
}

function edge(strategyStatus: StrategyStatus = 'PAUSED') {
  const asked: string[] = [];
  const db = new Proxy({}, { get: () => untouched('the database') }) as OrdersDb;
  const scope = testScope(db, newId());
  const context: OrdersContext = {
    caller: { accountId: scope.accountId, apiKeyId: newId(), scopes: ['read', 'orders:write'] },
    assertion: 'unused',
    requestId: 'test',
    log: createLogger('orders-test', 'silent'),
    scope,
    lookupStrategy: async (strategyId) => {
      asked.push(strategyId);
      return strategyStatus;
    },
    // No cursor is sent, so none is opened; none is made for an empty page.
    listCursors: {
      sync: { encode: () => untouched('the sync cursors'), decode: (cursor) => (cursor == null ? undefined : untouched('the sync cursors')) },
      newestFirst: { encode: () => untouched('the list cursors'), decode: (cursor) => (cursor == null ? undefined : untouched('the list cursors')) },
    },
    orderById: { load: () => untouched('the order loader') },
    strategyOrders: strategyOrdersLoaders(scope),
  };
  type Call = (parent: unknown, args: unknown, context: OrdersContext, info: GraphQLResolveInfo) => unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- whatever the resolver answers, read field by field by the assertions
  const call = async (resolver: unknown, args: unknown, parent: unknown = {}): Promise<any> =>
    (resolver as Call)(parent, args, context, {} as GraphQLResolveInfo);
  return { asked, call };
}

const order = (strategyId: string) => ({ symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: new Decimal('1'), strategyId });

describe('the resolver edge', () => {
  it('lower-cases a UUID strategyId and passes anything else on for the NOT_FOUND check', async () => {
    const upper = edge('PAUSED');
    const paused = await upper.call(resolvers.Mutation!.submitOrder, { input: order('0190F5A2-0000-7000-8000-00000000000A') });
    expect(upper.asked).toEqual(['0190f5a2-0000-7000-8000-00000000000a']);
    expect(paused.error).toMatchObject({ code: 'STRATEGY_NOT_ACTIVE', field: 'strategyId' });

    const malformed = edge();
    const notFound = await malformed.call(resolvers.Mutation!.submitOrder, { input: order('not-a-uuid') });
    expect(malformed.asked).toEqual([]);
    expect(notFound).toMatchObject({ orderSubmission: null, error: { code: 'NOT_FOUND', field: 'strategyId' } });
    expect(notFound.error.message).toContain('not-a-uuid');
  });

  it('answers order ids that are not UUIDs as no order, quoting the id sent', async () => {
    const { call } = edge();
    expect(await call(resolvers.Query!.orderSubmission, { id: 'not-a-uuid' })).toBeNull();
    expect(await call(resolvers.OrderSubmission!.__resolveReference, { id: 'not-a-uuid' })).toBeNull();
    const cancelled = await call(resolvers.Mutation!.cancelOrderSubmission, { id: 'order-1' });
    expect(cancelled).toMatchObject({ orderSubmission: null, error: { code: 'NOT_FOUND', field: 'id' } });
    expect(cancelled.error.message).toContain('order-1');
    const replaced = await call(resolvers.Mutation!.replaceOrderSubmission, { id: 'order-1', input: {} });
    expect(replaced).toMatchObject({ orderSubmission: null, replacedOrderSubmission: null, error: { code: 'NOT_FOUND', field: 'id' } });
    expect(replaced.error.message).toContain('order-1');
    const fill = { executionId: 'exec-1', orderSubmissionId: 'order-1', quantity: new Decimal('1'), price: new Decimal('1'), fee: new Decimal('0'), liquidity: 'UNKNOWN' };
    expect(await call(resolvers.Mutation!.applyFill, { input: fill })).toMatchObject({ outcome: 'NOT_FOUND', orderSubmission: null });
  });

  it('answers a strategy id that is not a UUID with no orders', async () => {
    const { call } = edge();
    const empty = { nodes: [], edges: [], pageInfo: { hasNextPage: false, endCursor: null } };
    expect(await call(resolvers.Query!.listOrderSubmissions, { filter: { strategyId: 'strategy-1' } })).toEqual(empty);
    expect(await call(resolvers.Strategy!.orderSubmissions, {}, { id: 'strategy-1' })).toEqual(empty);
    expect(await call(resolvers.Mutation!.cancelOrderSubmissions, { filter: { strategyId: 'strategy-1' } })).toEqual({
      cancelledCount: 0,
      orderSubmissions: [],
      hasMore: false,
      error: null,
    });
  });
});
