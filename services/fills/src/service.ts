import { requireIngestSecret } from '@ots/shared/outbox';
import { perRuntime, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import type { ServiceDefinition, ServiceRuntime } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createFillsContext, type FillsContext } from './context.ts';
import { FILLS_ORDERING } from './domain.ts';
import { startLegacyFillsBackfill } from './legacy-fills.ts';
import { registerRecoveryRoute } from './recovery.ts';
import type { FillsDatabase } from './repository.ts';
import { resolvers } from './resolvers.ts';

/** listFills' cursors are sealed under a key derived from the ingest secret, which every fills replica holds for its recovery route. */
const fillCursorsOf = perRuntime(
  (runtime: ServiceRuntime<FillsDatabase, 'fills'>) =>
    new SealedKeysetCursors(Buffer.from(requireIngestSecret(runtime.config), 'utf8'), { tag: FILLS_ORDERING, keyInfo: 'fills cursors v1' }),
);

export const fillsService: ServiceDefinition<FillsDatabase, FillsContext, 'fills'> = {
  name: 'fills',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: (base, runtime) => createFillsContext(base, runtime, fillCursorsOf(runtime)),
  registerRoutes: registerRecoveryRoute,
  startBackground: startLegacyFillsBackfill,
};
