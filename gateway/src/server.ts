import { readFileSync } from 'node:fs';
import { ApolloGateway, RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import type { Fetcher, FetcherResponse } from '@apollo/utils.fetcher';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { GraphQLError } from 'graphql';
import { ASSERTION_HEADER, AssertionIssuer, type CallerIdentity } from '@ots/shared/assertion';
import type { Config, ServiceName } from '@ots/shared/config';
import { createLogger, type Logger } from '@ots/shared/logger';
import { addHealthRoutes, createHttpApp, maskErrors, REQUEST_ID_HEADER, type RunningServer } from '@ots/shared/subgraph-server';
import { timedSubgraphFetch } from '@ots/shared/metrics';
import { observeContext, requestLogPlugin } from '@ots/shared/request-log';
import { decideKey, hashApiKey, isWellFormedApiKey } from '../../services/accounts/src/domain.ts';
import type { ApiKeyStore } from '../../services/accounts/src/key-store.ts';
import { registerConsole } from '../../services/accounts/src/console/http.ts';
import { errorPathsPlugin, rootFieldOwners } from './error-paths.ts';
import { KeyLookups } from './failed-auth.ts';
import { aliasLimit, costLimit, depthLimit } from './limits.ts';
import { RateLimiter, SharedRateLimiter } from './rate-limit.ts';
import { checkScalarInputs } from './scalar-check.ts';
import { rootResponseKeysOf, variantABody } from './unauthenticated.ts';

// The gateway never reports usage or schema anywhere.
process.env.APOLLO_TELEMETRY_DISABLED = '1';

export const SUPERGRAPH_PATH = new URL('../supergraph.graphql', import.meta.url);

export interface GatewayContext {
  caller: CallerIdentity;
  assertion: string;
  requestId: string;
  /** Subgraphs that did not answer during this request. */
  unavailableServices: Set<string>;
}

export interface GatewayOptions {
  config: Config;
  keyStore: ApiKeyStore;
  /** Shares the per-key rate limit between gateway instances; absent when REDIS_URL is unset. */
  redis?: Redis;
  isReady: () => Promise<boolean>;
  logger?: Logger;
  port?: number;
  /** The console's clock (sessions, links, sign-in limits); tests move it. */
  consoleClock?: () => number;
}

const INVALID_KEY = { detail: 'Invalid or expired API key' };
const ACCESS_DISABLED = { detail: 'API access is not enabled for this account' };

function unavailable(serviceName: string): GraphQLError {
  return new GraphQLError(`The ${serviceName} service is temporarily unavailable`, { extensions: { code: 'SERVICE_UNAVAILABLE' } });
}

/**
 * Each subgraph fetch carries the signed assertion and the request id, and gives up after the
 * subgraph timeout. A subgraph that does not answer, or answers 5xx (e.g. while it stops), is
 * reported as SERVICE_UNAVAILABLE and noted in the context, so its fields' errors name those fields.
 */
class AuthenticatedDataSource extends RemoteGraphQLDataSource<GatewayContext> {
  constructor(
    readonly serviceName: string,
    url: string,
    timeoutMs: number,
  ) {
    super({
      url,
      fetcher: (async (input: string, init?: RequestInit) => {
        try {
          return await timedSubgraphFetch('gateway', serviceName, () => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }));
        } catch {
          throw unavailable(serviceName);
        }
      }) as unknown as Fetcher,
    });
  }

  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<GatewayContext>) {
    request.http?.headers.set(ASSERTION_HEADER, context.assertion);
    request.http?.headers.set(REQUEST_ID_HEADER, context.requestId);
  }

  override async errorFromResponse(response: FetcherResponse) {
    return response.status >= 500 ? unavailable(this.serviceName) : super.errorFromResponse(response);
  }

  override didEncounterError(error: Error, _request: unknown, _response?: unknown, context?: GatewayContext) {
    if (error instanceof GraphQLError && error.extensions.code === 'SERVICE_UNAVAILABLE') context?.unavailableServices.add(this.serviceName);
  }
}

function graphqlBody(request: FastifyRequest): { query?: unknown; operationName?: unknown } | undefined {
  const body = request.body;
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as { query?: unknown; operationName?: unknown }) : undefined;
}

export async function startGateway(options: GatewayOptions): Promise<RunningServer> {
  const { config, keyStore } = options;
  const logger = options.logger ?? createLogger('gateway', config.logLevel);
  const app = createHttpApp(config, logger, { tls: config.tls, adoptRequestId: false });
  // Only JSON bodies are GraphQL requests here; Fastify would otherwise parse text/plain too.
  app.removeContentTypeParser('text/plain');
  const limits = config.limits;
  const keyLimiter = new SharedRateLimiter(
    new RateLimiter(limits.rateLimitPerSecond, limits.rateLimitBurst, 'api-key'),
    options.redis,
    config.redisKeyPrefix,
  );
  const failedAuthLimiter = new RateLimiter(limits.failedAuthPerSecond, limits.failedAuthBurst, 'failed-auth');
  const keyLookups = new KeyLookups(keyStore, limits.keyLookupConcurrency);
  if (!config.assertionPrivateKey) throw new Error('the gateway needs ASSERTION_PRIVATE_KEY to sign assertions');
  const assertions = new AssertionIssuer(config.assertionPrivateKey, config.assertionTtlSeconds);

  const supergraphSdl = readFileSync(SUPERGRAPH_PATH, 'utf8');
  const gateway = new ApolloGateway({
    supergraphSdl,
    buildService: ({ name }) =>
      new AuthenticatedDataSource(name, config.subgraphUrls[name as ServiceName] ?? '', limits.subgraphTimeoutMs),
    logger,
  });

  const apollo = new ApolloServer<GatewayContext>({
    gateway,
    formatError: maskErrors(logger),
    includeStacktraceInErrorResponses: false,
    // The process's own signal handler drains and stops every server in order.
    stopOnTerminationSignals: false,
    // Introspection needs a valid key like any other request (contract section 5), in production too.
    introspection: true,
    allowBatchedHttpRequests: false,
    parseOptions: { maxTokens: limits.tokens },
    validationRules: [depthLimit(limits.depth), aliasLimit(limits.aliases), costLimit(limits.cost)],
    plugins: [
      fastifyApolloDrainPlugin(app),
      ApolloServerPluginLandingPageDisabled(),
      errorPathsPlugin(rootFieldOwners(supergraphSdl)),
      requestLogPlugin(),
      {
        async requestDidStart() {
          return {
            async didResolveOperation({ schema, document, operation, request }) {
              if (operation) checkScalarInputs(schema, document, operation, request.variables);
            },
          };
        },
      },
    ],
  });
  await apollo.start();

  const tooManyRequests = (reply: FastifyReply, retryAfterSeconds: number) =>
    reply
      .code(429)
      .header('Retry-After', String(Math.max(1, retryAfterSeconds)))
      .send({ detail: 'Too many requests' });

  const identities = new WeakMap<FastifyRequest, GatewayContext>();

  /**
   * Contract section 5, answered before GraphQL runs: Variant A for a missing or empty key, 401 for
   * any key that is not a live, current key, 403 for an account without API access.
   */
  const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
    if (Array.isArray(request.body)) {
      return reply.code(400).send({ detail: 'Batched requests are not supported: send one operation per request' });
    }
    const body = graphqlBody(request);
    if (!body || typeof body.query !== 'string' || body.query.trim() === '') {
      return reply.code(400).send({
        data: null,
        errors: [{ message: 'The body must be a JSON object with a string member "query"', extensions: { code: 'BAD_REQUEST' } }],
      });
    }
    const header = request.headers['x-api-key'];
    const apiKey = typeof header === 'string' ? header.trim() : '';
    const operationName = typeof body.operationName === 'string' ? body.operationName : undefined;
    if (apiKey === '') {
      try {
        return reply.code(200).send(variantABody(body.query, operationName, limits.tokens));
      } catch (error) {
        const message = error instanceof GraphQLError ? error.message : 'The document could not be parsed';
        const code = error instanceof GraphQLError && error.extensions.code === 'BAD_REQUEST' ? 'BAD_REQUEST' : 'GRAPHQL_PARSE_FAILED';
        return reply.code(400).send({ data: null, errors: [{ message, extensions: { code } }] });
      }
    }
    if (config.production && !config.tls && request.protocol !== 'https') {
      return reply.code(400).send({ detail: 'API keys are accepted over HTTPS only' });
    }

    const address = request.ip;
    const refuse = (status: 401 | 403) => {
      const limited = failedAuthLimiter.take(address);
      if (!limited.allowed) return tooManyRequests(reply, limited.retryAfterSeconds);
      if (status === 403) return reply.code(403).send(ACCESS_DISABLED);
      return reply.code(401).header('WWW-Authenticate', 'ApiKey header="X-API-Key"').send(INVALID_KEY);
    };
    if (!isWellFormedApiKey(apiKey)) return refuse(401);

    // Every well-formed key is looked up, whatever its address did before (failed-auth.ts says why).
    const record = await keyLookups.lookup(hashApiKey(config.apiKeyHmacSecret, apiKey), address, reply);
    if (record === undefined) return reply;
    const decision = decideKey(record, Date.now());
    if (decision.kind === 'invalid') return refuse(401);
    if (decision.kind === 'access-disabled') return refuse(403);

    const rate = await keyLimiter.take(decision.apiKeyId);
    reply.headers(keyLimiter.headers(rate));
    if (!rate.allowed) return tooManyRequests(reply, rate.retryAfterSeconds);

    keyStore.recordUse(decision.apiKeyId);
    const caller = { accountId: decision.accountId, apiKeyId: decision.apiKeyId };
    identities.set(request, {
      caller,
      assertion: assertions.tokenFor(caller),
      requestId: String(request.id),
      unavailableServices: new Set(),
    });
  };

  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, String(request.id));
    const timer = setTimeout(() => {
      if (!reply.sent) {
        const body = graphqlBody(request);
        const keys = typeof body?.query === 'string' ? rootResponseKeysOf(body.query, typeof body.operationName === 'string' ? body.operationName : undefined) : [];
        void reply.code(504).send({
          data: null,
          errors: (keys.length > 0 ? keys : [undefined]).map((key) => ({
            message: 'The request timed out',
            ...(key ? { path: [key] } : {}),
            extensions: { code: 'GATEWAY_TIMEOUT' },
          })),
        });
      }
    }, limits.gatewayTimeoutMs);
    reply.raw.once('close', () => clearTimeout(timer));
  });

  await app.register(async (graphqlRoutes) => {
    graphqlRoutes.addHook('preHandler', authenticate);
    await graphqlRoutes.register(fastifyApollo(apollo), {
      method: ['POST'],
      path: '/graphql',
      context: async (request) => {
        const identity = identities.get(request);
        if (!identity) throw new GraphQLError('Authentication required', { extensions: { code: 'UNAUTHENTICATED' } });
        return observeContext(request, identity);
      },
    });
  });
  addHealthRoutes(app, options.isReady);
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
      await apollo.stop();
    },
  };
}
