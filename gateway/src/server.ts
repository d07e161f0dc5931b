import { readFileSync } from 'node:fs';
import { ApolloGateway } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { GraphQLError } from 'graphql';
import { databaseUrlOf, type GatewaySettings, type ServiceName } from '@ots/shared/config';
import { databaseProbe } from '@ots/shared/db';
import { isRedisReachable } from '@ots/shared/redis';
import type { BackgroundLoop } from '@ots/shared/background';
import { isDependencyOutage, TEMPORARILY_UNAVAILABLE_MESSAGE } from '@ots/shared/errors';
import { createLogger, type Logger } from '@ots/shared/logger';
import { addHealthRoutes, createHttpApp, maskErrors, REQUEST_ID_HEADER, type RunningServer } from '@ots/shared/subgraph-server';
import { observeContext, requestLogPlugin } from '@ots/shared/request-log';
import { scopeSet } from '@ots/shared/scopes';
import { IdempotencyStore, registerConsole, type ApiKeyStore } from '@ots/accounts';
import { connectionCap, limitConnections, openFileLimit } from './connections.ts';
import { createAuthentication, type Authentication } from './authentication.ts';
import { allowApiOrigins } from './cors.ts';
import { AuthenticatedDataSource, type GatewayContext } from './data-source.ts';
import { errorPathsPlugin, rootFieldOwners } from './error-paths.ts';
import { graphqlBody } from './graphql-body.ts';
import { registerIdempotency, type RootFieldRules } from './idempotency.ts';
import { registerDocs } from './reference/route.ts';
import { queryLimitRules } from './limits.ts';
import { operationChecksPlugin } from './operation-checks.ts';
import { keepOtherSubgraphsData } from './partial-data.ts';
import { checkScalarInputs } from './scalar-check.ts';
import { refusedFields, scopeCheckPlugin, scopeRules, supergraphForExecution } from './scopes.ts';
import { addGatewayTimeout } from './timeouts.ts';
import { registerStreams } from './streams/index.ts';
import { rootFieldErrorsBody } from './unauthenticated.ts';

// The gateway never reports usage or schema anywhere.
process.env.APOLLO_TELEMETRY_DISABLED = '1';

export const SUPERGRAPH_PATH = new URL('../supergraph.graphql', import.meta.url);

export interface GatewayOptions {
  config: GatewaySettings;
  keyStore: ApiKeyStore;
  /** Shares the per-key rate limit and stream count between gateway instances; absent when REDIS_URL is unset. */
  redis?: Redis;
  /** `/readyz`; by default whether the accounts database (on a connection of its own) and Redis answer. */
  isReady?: () => Promise<boolean>;
  logger?: Logger;
  port?: number;
  /** The console's clock (sessions, links, sign-in limits); tests move it. */
  consoleClock?: () => number;
}

/** The GraphQL engine: the supergraph, routed through authenticated data sources, under the query limits. */
function createApollo(config: GatewaySettings, logger: Logger, app: FastifyInstance, supergraphSdl: string, rules: RootFieldRules): ApolloServer<GatewayContext> {
  const limits = config.limits;
  const { owners } = rules;
  const gateway = new ApolloGateway({
    supergraphSdl: supergraphForExecution(supergraphSdl),
    buildService: ({ name }) =>
      new AuthenticatedDataSource(name, config.subgraphUrls[name as ServiceName] ?? '', limits.subgraphTimeoutMs),
    logger,
  });
  return new ApolloServer<GatewayContext>({
    gateway: keepOtherSubgraphsData(gateway, owners),
    formatError: maskErrors(logger),
    includeStacktraceInErrorResponses: false,
    // The process's own signal handler drains and stops every server in order.
    stopOnTerminationSignals: false,
    // Introspection needs a valid key like any other request (contract section 5), in production too.
    introspection: true,
    allowBatchedHttpRequests: false,
    // Persisted queries are refused before Apollo sees them (authentication.ts); no cache is kept for them.
    persistedQueries: false,
    parseOptions: { maxTokens: limits.tokens },
    validationRules: queryLimitRules(limits),
    plugins: [
      fastifyApolloDrainPlugin(app),
      ApolloServerPluginLandingPageDisabled(),
      errorPathsPlugin(owners),
      operationChecksPlugin(),
      scopeCheckPlugin(rules),
      requestLogPlugin(),
      {
        async requestDidStart() {
          return {
            // Apollo runs every didResolveOperation before scopeCheckPlugin's responseForOperation:
            // an operation the key's scopes refuse is answered FORBIDDEN whatever its values (section 5).
            async didResolveOperation({ schema, document, operation, request, contextValue }) {
              if (!operation || refusedFields(rules, document, operation, scopeSet(contextValue.caller.scopes)).length > 0) return;
              checkScalarInputs(schema, document, operation, request.variables);
            },
          };
        },
      },
    ],
  });
}

/** POST /graphql: authenticated first, then answered by Apollo with the caller in its context. */
async function registerGraphqlRoute(app: FastifyInstance, apollo: ApolloServer<GatewayContext>, authentication: Authentication, onRoutes: (routes: FastifyInstance) => void) {
  await app.register(async (graphqlRoutes) => {
    graphqlRoutes.addHook('preHandler', authentication.authenticate);
    // A dependency that did not answer before Apollo ran (the key store, the idempotency store) is
    // still answered in GraphQL's shape, TEMPORARILY_UNAVAILABLE on each root field, so that clients
    // retry (section 7); the app's handler answers everything else.
    graphqlRoutes.setErrorHandler(async (error, request, reply) => {
      if (!isDependencyOutage(error)) throw error;
      request.log.warn({ err: error }, 'a dependency did not answer');
      return reply.code(503).header('Retry-After', '1').send(rootFieldErrorsBody(graphqlBody(request), TEMPORARILY_UNAVAILABLE_MESSAGE, 'TEMPORARILY_UNAVAILABLE'));
    });
    onRoutes(graphqlRoutes);
    // Apollo answers a request it cannot run at all (variables that are not an object, a non-string
    // operationName) with errors alone; the spec's top-level failure carries `data: null` beside them.
    graphqlRoutes.addHook('onSend', async (_request, reply, payload) => {
      if (reply.statusCode !== 400 || typeof payload !== 'string' || !payload.startsWith('{"errors"')) return payload;
      try {
        const body = JSON.parse(payload) as Record<string, unknown>;
        return 'data' in body ? payload : JSON.stringify({ data: null, ...body });
      } catch {
        return payload;
      }
    });
    await graphqlRoutes.register(fastifyApollo(apollo), {
      method: ['POST'],
      path: '/graphql',
      context: async (request) => {
        const identity = authentication.identityOf(request);
        if (!identity) throw new GraphQLError('Authentication required', { extensions: { code: 'UNAUTHENTICATED' } });
        return observeContext(request, identity);
      },
    });
  });
}

export async function startGateway(options: GatewayOptions): Promise<RunningServer> {
  const { config, keyStore } = options;
  const logger = options.logger ?? createLogger('gateway', config.logLevel);
  const app = createHttpApp(config, logger, { tls: config.tls, adoptRequestId: false });
  limitConnections(app.server, connectionCap(config.limits.maxConnections, openFileLimit(), logger));
  // Only JSON bodies are GraphQL requests here; Fastify would otherwise parse text/plain too.
  app.removeContentTypeParser('text/plain');
  const authentication = createAuthentication(config, keyStore, options.redis);
  const supergraphSdl = readFileSync(SUPERGRAPH_PATH, 'utf8');
  const rules: RootFieldRules = { ...scopeRules(supergraphSdl), owners: rootFieldOwners(supergraphSdl) };
  const apollo = createApollo(config, logger, app, supergraphSdl, rules);
  await apollo.start();

  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, String(request.id));
  });
  allowApiOrigins(app, config.corsOrigins);
  addGatewayTimeout(app, config.limits.gatewayTimeoutMs);
  let idempotencyPurge: BackgroundLoop | undefined;
  await registerGraphqlRoute(app, apollo, authentication, (routes) => {
    idempotencyPurge = registerIdempotency(routes, new IdempotencyStore(keyStore.db, config.apiKeyHmacSecret), authentication.identityOf, rules, logger);
  });
  await registerStreams(app, { config, authentication, keyStore, logger, redis: options.redis });
  const accountsDatabase = options.isReady ? undefined : databaseProbe(databaseUrlOf(config, 'accounts')!, 'gateway');
  addHealthRoutes(app, options.isReady ?? (async () => (await accountsDatabase!.reachable()) && (await isRedisReachable(options.redis))));
  registerDocs(app);
  await registerConsole(app, { config, keyStore, now: options.consoleClock });

  await app.listen({ port: options.port ?? config.ports.gateway, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.ports.gateway;
  logger.info({ port }, 'gateway listening');
  return {
    name: 'gateway',
    port,
    url: `${config.tls ? 'https' : 'http'}://${config.host}:${port}/graphql`,
    app,
    close: async () => {
      await app.close();
      await idempotencyPurge?.stop();
      await apollo.stop();
      await accountsDatabase?.close();
    },
  };
}
