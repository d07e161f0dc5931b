import { RECORDED_FILLS_PATH } from '@ots/shared/contracts/internal-routes';
import { outboxRelay, requireIngestSecret } from '@ots/shared/outbox';
import { perRuntime, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import type { ServiceDefinition, ServiceRuntime } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createOrdersContext, type OrdersContext } from './context.ts';
import { registerLegacyFillsRoute } from './legacy-fills.ts';
import { SealedSyncCursors } from './sync-cursors.ts';
import { SUBMITTED_AT_DESC } from './domain.ts';
import type { OrdersDatabase } from './repository.ts';
import { resolvers } from './resolvers.ts';

/**
 * The lists' cursors are sealed under a key derived from the ingest secret: every orders replica
 * already holds it (its relay signs with it), so no new secret has to reach them, and the
 * derivation's label keeps the two uses apart. Rotating the secret refuses the cursors clients hold.
 */
const CURSOR_KEY_INFO = 'orders cursors v1';

/**
 * Longer than recordFill normally takes from orders' commit to fills' own insert (milliseconds), and
 * short enough that a fill whose request failed is kept within two seconds. A request still under way
 * when the relay sends is harmless: fills keeps one fill per id.
 */
const FILLS_RECOVERY_HOLD_MS = 1_000;

function createOrdersService(): ServiceDefinition<OrdersDatabase, OrdersContext, 'orders'> {
  const cursorsOf = perRuntime((runtime: ServiceRuntime<OrdersDatabase, 'orders'>) => {
    const secret = Buffer.from(requireIngestSecret(runtime.config), 'utf8');
    return {
      sync: new SealedSyncCursors(secret, CURSOR_KEY_INFO),
      newestFirst: new SealedKeysetCursors(secret, { tag: SUBMITTED_AT_DESC, keyInfo: CURSOR_KEY_INFO }),
    };
  });
  // The fills orders records reach the fills subgraph through an outbox of its own (migration 007),
  // recordFill's recovery path: a fills outage holds back none of the events service's. The request
  // that records a fill normally keeps it in fills before it answers, so the relay sends each row a
  // second later (FILLS_RECOVERY_HOLD_MS), after that request's insert and in bigger batches.
  const relay = outboxRelay<OrdersDatabase, OrdersContext>((config) => [
    { table: 'fills_outbox', url: () => new URL(RECORDED_FILLS_PATH, config.subgraphUrls.fills), holdMs: FILLS_RECOVERY_HOLD_MS },
  ]);
  return {
    name: 'orders',
    schema: SCHEMA,
    migrations,
    typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
    resolvers,
    createContext: (base, runtime) => createOrdersContext(base, runtime, cursorsOf(runtime)),
    startBackground: relay.startBackground,
    registerRoutes: async (app, runtime) => {
      await relay.registerRoutes!(app, runtime);
      await registerLegacyFillsRoute(app, runtime);
    },
  };
}

export const ordersService = createOrdersService();
