import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createAccountsContext, type AccountsContext } from './context.ts';
import type { AccountsDatabase } from './repository.ts';
import { resolvers } from './resolvers.ts';

export const accountsService: ServiceDefinition<AccountsDatabase, AccountsContext, 'accounts'> = {
  name: 'accounts',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: createAccountsContext,
};
