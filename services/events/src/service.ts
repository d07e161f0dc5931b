import type { BackgroundLoop } from '@ots/shared/background';
import type { Config } from '@ots/shared/config';
import { requireIngestSecret } from '@ots/shared/outbox';
import type { ServiceDefinition, ServiceRuntime } from '@ots/shared/service';
import { loadTypeDefs } from '@ots/shared/subgraph-server';
import { migrations, onlineIndexes, SCHEMA } from '../migrations/index.ts';
import { startDispatcher, startRetentionCleanup, systemClock, type Clock } from './dispatcher.ts';
import { registerIngestRoute } from './ingest.ts';
import type { EventsDatabase } from './repository.ts';
import { createEventsContext, type EventsContext } from './context.ts';
import { perRuntime, SealedFeedCursors, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import { DELIVERY_ORDERING, resolvers } from './resolvers.ts';
import { streamFeed } from './feed.ts';
import { eventFeedRoute } from '@ots/shared/event-feed';
import { callerRoute } from '@ots/shared/subgraph-server';

interface EventsServiceOptions {
  /** The retry schedule's time; tests pass one they advance. */
  clock?: Clock;
  random?: () => number;
}

/** Kept as first released: cursors that clients stored keep opening after an upgrade. */
const EVENT_FEED_CURSORS = { feed: 'events:commit_order', keyInfo: 'event feed cursors v1' };

function createEventsService(options: EventsServiceOptions = {}): ServiceDefinition<EventsDatabase, EventsContext, 'events'> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  // The ingest route wakes the dispatcher of the same running service.
  const dispatchers = new WeakMap<ServiceRuntime<EventsDatabase, 'events'>, BackgroundLoop>();
  const cursorsOf = perRuntime((runtime: ServiceRuntime<EventsDatabase, 'events'>) => ({
    feed: new SealedFeedCursors(requireSecretKey(runtime.config), EVENT_FEED_CURSORS),
    deliveries: new SealedKeysetCursors(requireSecretKey(runtime.config), { tag: DELIVERY_ORDERING, keyInfo: 'event delivery cursors v1' }),
  }));
  return {
    name: 'events',
    schema: SCHEMA,
    migrations,
    onlineIndexes,
    typeDefs: loadTypeDefs(new URL('../schema.graphql', import.meta.url)),
    resolvers,
    callerRoutes: [callerRoute<EventsContext, typeof eventFeedRoute>(eventFeedRoute, streamFeed)],
    createContext: (base, runtime) => {
      const { feed, deliveries } = cursorsOf(runtime);
      return createEventsContext(base, {
        db: runtime.db,
        production: runtime.config.production,
        secretKey: requireSecretKey(runtime.config),
        cursors: feed,
        deliveryCursors: deliveries,
        now: () => clock.now(),
      });
    },
    startBackground: (runtime) => {
      const secretKey = requireSecretKey(runtime.config);
      const deps = { db: runtime.db, log: runtime.log, production: runtime.config.production, clock, random, secretKey };
      const dispatcher = startDispatcher(deps, runtime.config.webhookDispatchIntervalMs);
      const cleanup = startRetentionCleanup(deps);
      dispatchers.set(runtime, dispatcher);
      return async () => {
        await dispatcher.stop();
        await cleanup.stop();
      };
    },
    registerRoutes: (app, runtime) =>
      registerIngestRoute(app, {
        db: runtime.db,
        secret: requireIngestSecret(runtime.config),
        now: () => clock.now(),
        onQueued: () => dispatchers.get(runtime)?.wake(),
      }),
  };
}

/** The events service cannot seal or open signing secrets without it; in production it has no default. */
function requireSecretKey(config: Pick<Config, 'webhookSecretKey'>): Buffer {
  if (!config.webhookSecretKey) throw new Error('events: WEBHOOK_SECRET_KEY is required to keep webhook signing secrets');
  return config.webhookSecretKey;
}

export const eventsService = createEventsService();
