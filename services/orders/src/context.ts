import type { Uuid } from '@ots/shared/ids';
import { loaderById } from '@ots/shared/loaders';
import type { Connection } from '@ots/shared/pagination';
import type { SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import { callerScope } from '@ots/shared/scope';
import type { ServiceRuntime } from '@ots/shared/service';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { OrderListCursors } from './domain.ts';
import { strategyOrdersLoaders, type ListRequest, type OrdersScope } from './operations.ts';
import { findOrders, type OrderRow, type OrdersDatabase } from './repository.ts';
import { strategyLookup, type StrategyLookup } from './strategy-lookup.ts';
import type { SealedSyncCursors } from './sync-cursors.ts';

/** What every orders resolver is given: the caller's scope, the strategies check and the per-request loaders. */
export interface OrdersContext extends BaseContext {
  /** The caller's rows: every use case runs in it. */
  scope: OrdersScope;
  lookupStrategy: StrategyLookup;
  /** The lists' cursors, sealed to the caller's account. */
  listCursors: OrderListCursors;
  /** Per request: every order the response needs is read in one query. */
  orderById: { load(id: Uuid): Promise<OrderRow | null> };
  /** Per request: the orders of every strategy in the response, one query per distinct arguments. */
  strategyOrders(strategyId: Uuid | undefined, request: ListRequest): Promise<Connection<OrderRow>>;
}

export function createOrdersContext(base: BaseContext, { db, config }: ServiceRuntime<OrdersDatabase, 'orders'>, cursors: { sync: SealedSyncCursors; newestFirst: SealedKeysetCursors }): OrdersContext {
  const scope: OrdersScope = callerScope(db, base);
  return {
    ...base,
    scope,
    lookupStrategy: strategyLookup({
      strategiesUrl: config.subgraphUrls.strategies,
      // Half the subgraph fetch timeout: the gateway gives up on this subgraph after the full
      // timeout, so a strategies subgraph that hangs must be given up on sooner for the client to
      // receive TEMPORARILY_UNAVAILABLE rather than a timeout of the whole field.
      timeoutMs: Math.floor(config.limits.subgraphTimeoutMs / 2),
      assertion: base.assertion,
      requestId: base.requestId,
    }),
    listCursors: { sync: cursors.sync.forAccount(scope.accountId), newestFirst: cursors.newestFirst.forAccount(scope.accountId) },
    orderById: loaderById<OrderRow, Uuid>((ids) => findOrders(db, scope.accountId, ids)),
    strategyOrders: strategyOrdersLoaders(scope),
  };
}
