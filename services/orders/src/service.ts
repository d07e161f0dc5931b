import { outboxRelay } from '@ots/shared/outbox';
import type { ServiceDefinition } from '@ots/shared/service';
import { loaderById } from '@ots/shared/loaders';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { strategyOrdersLoaders } from './operations.ts';
import { findOrders, type OrdersDatabase } from './repository.ts';
import { resolvers, type OrdersContext } from './resolvers.ts';
import { strategyLookup } from './strategy-lookup.ts';

export const ordersService: ServiceDefinition<OrdersDatabase, OrdersContext> = {
  name: 'orders',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: (base, { db, config }) => {
    const accountId = base.caller.accountId;
    return {
      ...base,
      db,
      lookupStrategy: strategyLookup({
        strategiesUrl: config.subgraphUrls.strategies,
        // Half the subgraph fetch timeout: the gateway gives up on this subgraph after the full
        // timeout, so a strategies subgraph that hangs must be given up on sooner for the client to
        // receive TEMPORARILY_UNAVAILABLE rather than a timeout of the whole field.
        timeoutMs: Math.floor(config.limits.subgraphTimeoutMs / 2),
        assertion: base.assertion,
        requestId: base.requestId,
      }),
      orderById: loaderById((ids) => findOrders(db, accountId, ids)),
      strategyOrders: strategyOrdersLoaders({ db, accountId }),
    };
  },
  ...outboxRelay<OrdersDatabase, OrdersContext>(),
};
