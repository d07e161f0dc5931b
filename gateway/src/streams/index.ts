import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { ApiKeyStore } from '@ots/accounts';
import { databaseUrlOf, type GatewaySettings } from '@ots/shared/config';
import { eventFeedRoute, type EventFeedAnswer, type EventFeedInput } from '@ots/shared/event-feed';
import { FeedWakeups } from '@ots/shared/feed-wakeups';
import type { Logger } from '@ots/shared/logger';
import { callSubgraphRoute } from '@ots/shared/subgraph-client';
import type { Authentication } from '../authentication.ts';
import type { GatewayContext } from '../data-source.ts';
import { DEFAULT_STREAM_LIMITS, EventStream, missingReadScope } from './event-stream.ts';
import { StreamLeases } from './leases.ts';
import { StreamRegistry } from './registry.ts';
import { feedArgumentsOf, streamSchema } from './schema.ts';
import { tooManyStreams, type StreamServices } from './services.ts';
import { SharedReads } from './shared-reads.ts';
import { registerSseRoute } from './sse.ts';
import { attachWebSocketServer } from './ws.ts';

export interface StreamDeps {
  config: GatewaySettings;
  authentication: Authentication;
  keyStore: ApiKeyStore;
  logger: Logger;
  /** Counts each key's open streams across every gateway; absent when REDIS_URL is unset. */
  redis?: Redis | undefined;
  limits?: Partial<typeof DEFAULT_STREAM_LIMITS>;
}

/**
 * GraphQL subscriptions at the gateway's origin (contract sections 4 and 6): `POST /graphql/stream`
 * (graphql-sse, distinct connections) and `/graphql/ws` (graphql-transport-ws), both authenticated
 * as /graphql is. Streams read the events subgraph's feed through its route on the caller's behalf,
 * woken by the events service's notifications; they end when their key stops being valid (checked
 * whenever the key cache sees a change) and, cleanly, when the gateway stops.
 */
export async function registerStreams(app: FastifyInstance, deps: StreamDeps): Promise<void> {
  const { config, authentication, logger } = deps;
  const limits = { ...DEFAULT_STREAM_LIMITS, ...deps.limits };
  // The events service notifies on its own database, which may be a server of its own (EVENTS_DATABASE_URL).
  const eventsDatabaseUrl = databaseUrlOf(config, 'events');
  if (!eventsDatabaseUrl) throw new Error("the gateway needs the events service's database (DATABASE_URL or EVENTS_DATABASE_URL) to follow event wake-ups");
  const wakeups = new FeedWakeups(eventsDatabaseUrl, logger);
  wakeups.start();
  const leases = deps.redis && new StreamLeases(deps.redis, config.redisKeyPrefix);
  const registry = new StreamRegistry(limits.perKey, authentication.keyStatus, leases, logger);
  const stopFollowingKeys = deps.keyStore.onChange(() => registry.keysChanged());
  const eventsUrl = config.subgraphUrls.events;

  const reads = new SharedReads<EventFeedAnswer>();
  const readFeed = (caller: GatewayContext['caller'], input: EventFeedInput) => {
    // The assertion names the account, the key and its scopes: only the same caller's identical reads are shared.
    const assertion = authentication.assertionFor(caller);
    return reads.read(`${assertion}\n${JSON.stringify(input)}`, () =>
      callSubgraphRoute({
        route: eventFeedRoute,
        subgraphUrl: eventsUrl,
        input,
        caller: 'gateway',
        subgraph: 'events',
        assertion,
        requestId: 'event-stream',
        timeoutMs: config.limits.subgraphTimeoutMs,
      }),
    );
  };

  const services: StreamServices = {
    config,
    authentication,
    registry,
    limits,
    schema: streamSchema(),
    logger,
    openStream: async (caller, key, args, transport) => {
      if (!caller.scopes.includes('read')) throw missingReadScope();
      const stream: EventStream = new EventStream({
        accountId: caller.accountId,
        ...feedArgumentsOf(args, transport.resumeFrom),
        readFeed: (input) => readFeed(caller, input),
        subscribeWakeups: (accountId, wake) =>
          wakeups.subscribe(accountId, () => {
            reads.woken();
            wake();
          }),
        limits,
        hasRoom: () => transport.hasRoom(stream),
        onEnd: (reason) => transport.onEnd(reason),
        onClosed: () => registry.close(stream, key.apiKeyId),
      });
      if (!(await registry.open(stream, key, transport.place))) throw tooManyStreams(limits.perKey);
      return stream;
    },
    onKeysChanged: (listener) => deps.keyStore.onChange(listener),
  };

  await registerSseRoute(app, services);
  const webSockets = attachWebSocketServer(app, services);

  // Before Fastify waits for open requests: every stream ends now, so that its client reconnects elsewhere.
  app.addHook('preClose', async () => {
    stopFollowingKeys();
    registry.endAll('shutdown');
    await webSockets.close();
    await wakeups.close();
    await registry.drained();
  });
}
