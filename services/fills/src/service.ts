import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import type { FillsDatabase } from './repository.ts';
import { createLoaders, resolvers, type FillsContext } from './resolvers.ts';
import { startFillSweeper } from './sweeper.ts';

export const fillsService: ServiceDefinition<FillsDatabase, FillsContext> = {
  name: 'fills',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: (base, { db, config }) => ({
    ...base,
    db,
    orders: {
      url: config.subgraphUrls.orders,
      timeoutMs: config.limits.subgraphTimeoutMs,
      assertion: base.assertion,
      requestId: base.requestId,
    },
    loaders: createLoaders(db, base.caller.accountId),
  }),
  startBackground: ({ config, db, log }) => {
    // Without the signing key the sweeper could not act for any account, and pending fills would stay pending.
    if (!config.assertionPrivateKey) throw new Error('fills: ASSERTION_PRIVATE_KEY is required by the fill recovery sweeper');
    return startFillSweeper({ db, log, config, assertionPrivateKey: config.assertionPrivateKey });
  },
};
