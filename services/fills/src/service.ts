import { outboxRelay } from '@ots/shared/outbox';
import type { ServiceDefinition } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createFillsContext, type FillsContext } from './context.ts';
import type { FillsDatabase } from './repository.ts';
import { resolvers } from './resolvers.ts';
import { startFillSweeper } from './sweeper.ts';

const relay = outboxRelay<FillsDatabase, FillsContext>();

export const fillsService: ServiceDefinition<FillsDatabase, FillsContext> = {
  name: 'fills',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: createFillsContext,
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
