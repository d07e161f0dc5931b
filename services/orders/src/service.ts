import { outboxRelay, RECORDED_FILLS_PATH } from '@ots/shared/outbox';
import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createOrdersContext, type OrdersContext } from './context.ts';
import type { OrdersDatabase } from './repository.ts';
import { resolvers } from './resolvers.ts';

export const ordersService: ServiceDefinition<OrdersDatabase, OrdersContext, 'orders'> = {
  name: 'orders',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: createOrdersContext,
  // The fills orders records reach the fills subgraph through the outbox too: recordFill's recovery path.
  ...outboxRelay<OrdersDatabase, OrdersContext>((config) => [
    { types: ['fill.recorded'], url: () => new URL(RECORDED_FILLS_PATH, config.subgraphUrls.fills) },
  ]),
};
