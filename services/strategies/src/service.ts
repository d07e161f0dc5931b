import { outboxRelay } from '@ots/shared/outbox';
import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import type { StrategiesDatabase } from './repository.ts';
import { createStrategiesContext, type StrategiesContext } from './context.ts';
import { resolvers } from './resolvers.ts';

export const strategiesService: ServiceDefinition<StrategiesDatabase, StrategiesContext, 'strategies'> = {
  name: 'strategies',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: (base, { db }) => createStrategiesContext(base, db),
  ...outboxRelay<StrategiesDatabase, StrategiesContext>(),
};
