import { outboxRelay } from '@ots/shared/outbox';
import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createOrdersContext, type OrdersContext } from './context.ts';
import type { OrdersDatabase } from './repository.ts';
import { callerRoutes, resolvers } from './resolvers.ts';

export const ordersService: ServiceDefinition<OrdersDatabase, OrdersContext> = {
  name: 'orders',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  callerRoutes,
  createContext: createOrdersContext,
  ...outboxRelay<OrdersDatabase, OrdersContext>(),
};
