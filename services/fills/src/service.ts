import { outboxRelay } from '@ots/shared/outbox';
import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import type { FillsDatabase } from './repository.ts';
import { createLoaders, resolvers, type FillsContext } from './resolvers.ts';
import { startFillSweeper } from './sweeper.ts';

const relay = outboxRelay<FillsDatabase, FillsContext>();

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
      // The budget of a whole recordFill (its two calls to orders share it): half the subgraph fetch
      // timeout, as orders gives its strategy check. The gateway abandons the fetch of fills after the
      // full timeout, so a slow or silent orders must be given up on sooner for the client to receive
      // TEMPORARILY_UNAVAILABLE rather than a top-level error blaming fills.
      timeoutMs: Math.floor(config.limits.subgraphTimeoutMs / 2),
      assertion: base.assertion,
      requestId: base.requestId,
    },
    loaders: createLoaders(db, base.caller.accountId),
  }),
  registerRoutes: relay.registerRoutes,
  startBackground: (runtime) => {
    const { config, db, log } = runtime;
    // Without the signing key the sweeper could not act for any account, and pending fills would stay pending.
    if (!config.assertionPrivateKey) throw new Error('fills: ASSERTION_PRIVATE_KEY is required by the fill recovery sweeper');
    const stopSweeper = startFillSweeper({ db, log, config, assertionPrivateKey: config.assertionPrivateKey });
    // The sweeper settles fills (and so writes their events) outside any request: the relay's own polling sends those.
    const stopRelay = relay.startBackground!(runtime);
    return async () => {
      await stopSweeper();
      await stopRelay();
    };
  },
};
