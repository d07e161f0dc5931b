import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createFillsContext, type FillsContext } from './context.ts';
import { registerRecoveryRoute } from './recovery.ts';
import type { FillsDatabase } from './repository.ts';
import { resolvers } from './resolvers.ts';

export const fillsService: ServiceDefinition<FillsDatabase, FillsContext, 'fills'> = {
  name: 'fills',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: createFillsContext,
  registerRoutes: registerRecoveryRoute,
};
