import { outboxRelay, requireIngestSecret } from '@ots/shared/outbox';
import { perRuntime, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import type { ServiceDefinition, ServiceRuntime } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import type { StrategiesDatabase } from './repository.ts';
import { createStrategiesContext, type StrategiesContext } from './context.ts';
import { LIST_ORDERING, resolvers } from './resolvers.ts';

/** listStrategies' cursors are sealed under a key derived from the ingest secret, which every strategies replica holds for its relay. */
const strategyCursorsOf = perRuntime(
  (runtime: ServiceRuntime<StrategiesDatabase, 'strategies'>) =>
    new SealedKeysetCursors(Buffer.from(requireIngestSecret(runtime.config), 'utf8'), { tag: LIST_ORDERING, keyInfo: 'strategies cursors v1' }),
);

export const strategiesService: ServiceDefinition<StrategiesDatabase, StrategiesContext, 'strategies'> = {
  name: 'strategies',
  schema: SCHEMA,
  migrations,
  typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
  resolvers,
  createContext: (base, runtime) => createStrategiesContext(base, runtime.db, strategyCursorsOf(runtime)),
  ...outboxRelay<StrategiesDatabase, StrategiesContext>(),
};
