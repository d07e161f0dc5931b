import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { ApolloServer, type ContextFunction } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import { buildSubgraphSchema } from '@apollo/subgraph';
import type { GraphQLResolverMap } from '@apollo/subgraph/dist/schema-helper/resolverMap.js';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { GraphQLError, parse, type DocumentNode, type GraphQLFormattedError } from 'graphql';
import { ASSERTION_HEADER, AssertionVerifier, type CallerIdentity } from './assertion.ts';
import type { Config } from './config.ts';
import { CLIENT_SAFE_CODES, MASKED_MESSAGE } from './errors.ts';
import type { Logger } from './logger.ts';

export const REQUEST_ID_HEADER = 'x-request-id';

/** What every subgraph resolver receives; services extend it with their repositories and loaders. */
export interface BaseContext {
  caller: CallerIdentity;
  /** The caller's assertion, forwarded unchanged on subgraph-to-subgraph calls. */
  assertion: string;
  requestId: string;
  log: Logger;
}

export interface SubgraphOptions<Context extends BaseContext> {
  name: string;
  typeDefs: DocumentNode;
  resolvers: GraphQLResolverMap<Context>;
  config: Config;
  logger: Logger;
  port: number;
  /** Adds the service's per-request state (repositories, DataLoaders) to the base context. */
  createContext(base: BaseContext): Context;
  /** Resolves true when the service's dependencies answer; `/readyz` reports it. */
  isReady(): Promise<boolean>;
}

export interface RunningServer {
  name: string;
  port: number;
  url: string;
  app: FastifyInstance;
  close(): Promise<void>;
}

export function loadTypeDefs(schemaFileUrl: URL): DocumentNode {
  return parse(readFileSync(schemaFileUrl, 'utf8'));
}

export function requestIdOf(request: { headers: Record<string, string | string[] | undefined> }): string {
  const header = request.headers[REQUEST_ID_HEADER];
  return typeof header === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(header) ? header : randomUUID();
}

/**
 * Errors a client may see keep their message (contract section 7); everything else is logged with
 * the request id and replaced by a masked error, so no stack, SQL or host name leaves the process.
 */
export function maskErrors(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && CLIENT_SAFE_CODES.has(code)) {
      const { extensions, ...rest } = formatted;
      const argumentName = extensions?.argumentName;
      return { ...rest, extensions: { code, ...(typeof argumentName === 'string' ? { argumentName } : {}) } };
    }
    const original = unwrapResolverError(error);
    log.error({ err: original, path: formatted.path }, 'masked an internal error');
    return {
      message: MASKED_MESSAGE,
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    };
  };
}

/** `tls` is given only to the gateway, which serves HTTPS itself when it has a certificate. */
export function createHttpApp(config: Config, logger: Logger, tls?: { certFile: string; keyFile: string }): FastifyInstance {
  const options = {
    loggerInstance: logger,
    bodyLimit: config.limits.bodyBytes,
    genReqId: (request: { headers: Record<string, string | string[] | undefined> }) => requestIdOf(request),
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle' as const,
  };
  if (!tls) return Fastify(options);
  // The HTTPS server has the same request and reply API; only the transport differs.
  return Fastify({ ...options, https: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } }) as unknown as FastifyInstance;
}

export function addHealthRoutes(app: FastifyInstance, isReady: () => Promise<boolean>): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await isReady();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable' });
  });
}

/**
 * Serves a subgraph: `/graphql` only with a valid gateway assertion (401 otherwise, so a client that
 * reaches the port directly with a made-up account header gets nothing), plus `/healthz` and `/readyz`.
 */
export async function startSubgraphServer<Context extends BaseContext>(options: SubgraphOptions<Context>): Promise<RunningServer> {
  const { config, logger } = options;
  const app = createHttpApp(config, logger);
  const apollo = new ApolloServer<Context>({
    schema: buildSubgraphSchema([{ typeDefs: options.typeDefs, resolvers: options.resolvers as GraphQLResolverMap<unknown> }]),
    formatError: maskErrors(logger),
    includeStacktraceInErrorResponses: false,
    // Inline traces would hand per-field timings to whoever calls the subgraph.
    plugins: [fastifyApolloDrainPlugin(app), ApolloServerPluginInlineTraceDisabled()],
  });
  await apollo.start();

  // Verified once per request, before the body is read; the context takes the identity from here.
  const callers = new WeakMap<FastifyRequest, { caller: CallerIdentity; assertion: string }>();
  const verifier = new AssertionVerifier(config.assertionPublicKey);
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url !== '/graphql') return;
    const assertion = request.headers[ASSERTION_HEADER];
    const caller = typeof assertion === 'string' ? verifier.verify(assertion) : undefined;
    if (!caller || typeof assertion !== 'string') {
      return reply.code(401).send({ detail: 'Requests to a subgraph must carry a valid gateway assertion' });
    }
    callers.set(request, { caller, assertion });
  });

  const context: ContextFunction<[FastifyRequest, FastifyReply], Context> = async (request) => {
    const verified = callers.get(request);
    if (!verified) throw new GraphQLError('Unauthenticated', { extensions: { code: 'UNAUTHENTICATED' } });
    return options.createContext({ ...verified, requestId: String(request.id), log: request.log });
  };

  await app.register(fastifyApollo(apollo), {
    context,
    method: ['POST'],
    path: '/graphql',
  });
  addHealthRoutes(app, options.isReady);

  await app.listen({ port: options.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  logger.info({ port }, `${options.name} subgraph listening`);
  return {
    name: options.name,
    port,
    url: `http://${config.host}:${port}/graphql`,
    app,
    close: async () => {
      await app.close();
      await apollo.stop();
    },
  };
}
