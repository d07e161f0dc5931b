import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { ApolloServer, type ContextFunction } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import fastifyApollo, { fastifyApolloDrainPlugin } from '@as-integrations/fastify';
import { buildSubgraphSchema } from '@apollo/subgraph';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { defaultFieldResolver, GraphQLError, isObjectType, parse, type DocumentNode, type GraphQLField, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import type { z } from 'zod';
import { ASSERTION_HEADER, AssertionVerifier, type CallerIdentity } from './assertion.ts';
import type { Config, SubgraphProcessConfig } from './config.ts';
import { CLIENT_SAFE_CODES, isDependencyOutage, MASKED_MESSAGE, TEMPORARILY_UNAVAILABLE_MESSAGE } from './errors.ts';
import { discardRestOfBody, serverTimeouts } from './http-edge.ts';
import type { Logger } from './logger.ts';
import { answerOutagesInPayloads, outcomeUnknownPlugin } from './outage-payloads.ts';
import { missingScope, nestedFieldScopes, rootFieldScopes, scopeSet, type ScopeRequirement } from './scopes.ts';
import { refuseIllFormedStrings } from './string-inputs.ts';
import type { SubgraphRouteContract } from './subgraph-route.ts';
import { observeCaller, observeContext, observeRequests, requestLogPlugin } from './request-log.ts';

export const REQUEST_ID_HEADER = 'x-request-id';

/** What every subgraph resolver receives; services extend it with their repositories and loaders. */
export interface BaseContext {
  caller: CallerIdentity;
  /** The caller's assertion, forwarded unchanged on subgraph-to-subgraph calls. */
  assertion: string;
  requestId: string;
  log: Logger;
}

type SchemaModule = Exclude<Extract<Parameters<typeof buildSubgraphSchema>[0], readonly unknown[]>[number], DocumentNode>;

/**
 * A resolver map as `buildSubgraphSchema` takes it, named through its public signature. Each service
 * types its map with the `Resolvers` generated from its schema (`npm run codegen`), which fits it as is.
 */
export type SubgraphResolvers = NonNullable<SchemaModule['resolvers']>;

/**
 * An entity another subgraph owns, as this one holds it: by its id, the key the gateway resolves the
 * other fields by (a parent may carry more, e.g. fields the subgraph `@provides`).
 */
export interface EntityReference {
  id: string;
}

/**
 * A route this subgraph serves to another beside /graphql, on a caller's behalf: the gateway
 * assertion is checked as for /graphql, the JSON body against the contract's input (400 naming the
 * first problem otherwise), and `handle` answers with the same context a resolver gets.
 */
export interface CallerRoute<Context extends BaseContext, Route extends SubgraphRouteContract = SubgraphRouteContract> {
  contract: Route;
  handle(input: z.output<Route['input']>, context: Context): Promise<z.input<Route['answer']>>;
}

/** Keeps the route's input and answer types tied to its contract where it is declared. */
export function callerRoute<Context extends BaseContext, Route extends SubgraphRouteContract>(
  contract: Route,
  handle: CallerRoute<Context, Route>['handle'],
): CallerRoute<Context> {
  return { contract, handle };
}

export interface SubgraphOptions<Context extends BaseContext> {
  name: string;
  typeDefs: DocumentNode;
  resolvers: SubgraphResolvers;
  config: SubgraphProcessConfig;
  logger: Logger;
  port: number;
  /** Adds the service's per-request state (repositories, DataLoaders) to the base context. */
  createContext(base: BaseContext): Context;
  /** Resolves true when the service's dependencies answer; `/readyz` reports it. */
  isReady(): Promise<boolean>;
  callerRoutes?: CallerRoute<Context>[] | undefined;
  registerRoutes?: ((app: FastifyInstance) => Promise<void>) | undefined;
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

function requestIdOf(request: { headers: Record<string, string | string[] | undefined> }): string {
  const header = request.headers[REQUEST_ID_HEADER];
  return typeof header === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(header) ? header : randomUUID();
}

/**
 * Errors a client may see keep their message (contract section 7); a dependency that did not answer
 * is TEMPORARILY_UNAVAILABLE, so the client retries; everything else is logged with the request id
 * and replaced by a masked error, so no stack, SQL or host name leaves the process.
 */
export function maskErrors(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const code = ownValidationCode(error) ?? formatted.extensions?.code;
    if (typeof code === 'string' && CLIENT_SAFE_CODES.has(code)) {
      const { extensions, ...rest } = formatted;
      const argumentName = extensions?.argumentName;
      const requiredScope = extensions?.requiredScope;
      return {
        ...rest,
        extensions: { code, ...(typeof argumentName === 'string' ? { argumentName } : {}), ...(typeof requiredScope === 'string' ? { requiredScope } : {}) },
      };
    }
    const original = unwrapResolverError(error);
    if (isDependencyOutage(original)) {
      log.warn({ err: original, path: formatted.path }, 'a dependency did not answer');
      return { message: TEMPORARILY_UNAVAILABLE_MESSAGE, ...(formatted.path ? { path: formatted.path } : {}), extensions: { code: 'TEMPORARILY_UNAVAILABLE' } };
    }
    log.error({ err: original, path: formatted.path }, 'masked an internal error');
    return {
      message: MASKED_MESSAGE,
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    };
  };
}

/**
 * Apollo answers every error of a validation rule as GRAPHQL_VALIDATION_FAILED, over the code the
 * rule gave it; a rule of ours that names its own (QUERY_TOO_COMPLEX for the query limits) keeps it.
 */
function ownValidationCode(error: unknown): string | undefined {
  if (!(error instanceof GraphQLError) || error.extensions.code !== 'GRAPHQL_VALIDATION_FAILED') return undefined;
  const original = error.originalError;
  const code = original instanceof GraphQLError ? original.extensions.code : undefined;
  return typeof code === 'string' && CLIENT_SAFE_CODES.has(code) ? code : undefined;
}

/**
 * The subgraph's own check of scopes (contract section 5), behind the gateway's: each root field
 * declared with `@requiresScopes` refuses a caller whose assertion lacks the scope, so a copied
 * assertion of a read-only key places no order even sent straight to a subgraph. Federation's
 * `_entities` is left alone: the gateway resolves nested fields of a root field it allowed through
 * it, and those of them that declare a scope of their own (a strategy's orders) check it here too.
 */
function requireScopes(schema: GraphQLSchema, typeDefs: DocumentNode): GraphQLSchema {
  const { required } = rootFieldScopes(typeDefs);
  const undeclared: ScopeRequirement = [['read']];
  const guard = (field: GraphQLField<unknown, BaseContext>, requirement: ScopeRequirement) => {
    const resolve = field.resolve ?? defaultFieldResolver;
    field.resolve = (source, args, context: BaseContext, info) => {
      const missing = missingScope(scopeSet(context.caller.scopes), requirement);
      if (missing !== undefined) throw new GraphQLError(`This API key lacks the scope ${missing}`, { extensions: { code: 'FORBIDDEN', requiredScope: missing } });
      return resolve(source, args, context, info);
    };
  };
  for (const type of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
    for (const field of Object.values(type?.getFields() ?? {})) {
      if (!field.name.startsWith('_')) guard(field, required.get(`${type!.name}.${field.name}`) ?? undeclared);
    }
  }
  for (const [name, requirement] of nestedFieldScopes(typeDefs).required) {
    const [typeName, fieldName] = name.split('.') as [string, string];
    const type = schema.getType(typeName);
    if (isObjectType(type)) guard(type.getFields()[fieldName]!, requirement);
  }
  return schema;
}

export interface HttpAppOptions {
  /** The `service` of its request log lines and metrics: the subgraph's name; `gateway` when unset. */
  service?: string;
  /** Only the gateway: it serves HTTPS itself when it has a certificate. */
  tls?: { certFile: string; keyFile: string };
  /**
   * Subgraphs adopt the gateway's `x-request-id` so that one request has one id in every log; the
   * gateway makes its own, since a client could otherwise choose what the logs correlate.
   */
  adoptRequestId: boolean;
  /** A subgraph's caller routes: counted in the request metrics like its GraphQL operations. */
  operationRoutes?: readonly string[];
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * How long a stopping server waits for requests in flight before it drops the remaining connections:
 * a second past the longest a request may run (the gateway's timeout, or a subgraph's), so that every
 * request that can still be answered is.
 */
function drainDeadlineMs(limits: Pick<Config['limits'], 'gatewayTimeoutMs' | 'subgraphTimeoutMs'>): number {
  return Math.max(limits.gatewayTimeoutMs, limits.subgraphTimeoutMs) + 1_000;
}

export function createHttpApp(config: Pick<Config, 'limits' | 'trustProxy'>, logger: Logger, options: HttpAppOptions): FastifyInstance {
  const timeouts = serverTimeouts(config.limits);
  const settings = {
    http: timeouts,
    requestTimeout: config.limits.bodyTimeoutMs,
    loggerInstance: logger,
    bodyLimit: config.limits.bodyBytes,
    genReqId: options.adoptRequestId
      ? (request: { headers: Record<string, string | string[] | undefined> }) => requestIdOf(request)
      : () => randomUUID(),
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle' as const,
  };
  // The HTTPS server has the same request and reply API; only the transport differs.
  const https = options.tls ? { https: { ...timeouts, cert: readFileSync(options.tls.certFile), key: readFileSync(options.tls.keyFile) } } : {};
  const app = Fastify({ ...settings, ...https } as typeof settings) as unknown as FastifyInstance;
  observeRequests(app, {
    service: options.service ?? 'gateway',
    kind: options.adoptRequestId ? 'subgraph' : 'gateway',
    operationRoutes: options.operationRoutes,
  });

  // Whatever escapes a route (a database that is down during a key look-up, a bug) is logged with the
  // request id and answered without its message, which could name a host or a query.
  app.setErrorHandler(async (error: Error & { statusCode?: number; code?: string }, request, reply) => {
    const status = error.statusCode ?? 500;
    // A body refused before it was read (413, 415) is discarded first, so the client sees the status.
    await discardRestOfBody(request.raw);
    if (status === 415) return reply.code(415).send({ detail: 'Unsupported Media Type: send a JSON body with the header Content-Type: application/json' });
    if (status < 500) return reply.code(status).send({ detail: error.message });
    request.log.error({ err: error }, 'request failed');
    return isDependencyOutage(error)
      ? reply.code(503).header('Retry-After', '1').send({ detail: 'The service is temporarily unavailable' })
      : reply.code(500).send({ detail: 'Internal server error' });
  });

  // JSON is UTF-8 (RFC 8259): bytes that are not are refused, where decoding would turn them into
  // U+FFFD and two different ids into one (contract section 2).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = STRICT_UTF8.decode(body as Buffer);
    } catch {
      done(Object.assign(new Error('Body is not valid UTF-8'), { statusCode: 400 }), undefined);
      return;
    }
    parseJson(request, text, done);
  });

  // Draining: keep-alive connections are closed after their response once the server is stopping, so
  // a stop waits for requests in flight, not for idle clients' keep-alive timeouts.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    app.server.closeIdleConnections();
    setTimeout(() => app.server.closeAllConnections(), drainDeadlineMs(config.limits)).unref();
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  app.addHook('onResponse', async () => {
    if (closing) app.server.closeIdleConnections();
  });
  return app;
}

export function addHealthRoutes(app: FastifyInstance, isReady: () => Promise<boolean>): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await isReady();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable' });
  });
}

/**
 * Serves a subgraph: `/graphql` and its caller routes only with a valid gateway assertion (401
 * otherwise, so a client that reaches the port directly with a made-up account header gets nothing),
 * plus `/healthz` and `/readyz`.
 */
export async function startSubgraphServer<Context extends BaseContext>(options: SubgraphOptions<Context>): Promise<RunningServer> {
  const { config, logger } = options;
  const callerRoutes = options.callerRoutes ?? [];
  const app = createHttpApp(config, logger, {
    service: options.name,
    adoptRequestId: true,
    operationRoutes: callerRoutes.map((route) => route.contract.path),
  });
  const apollo = new ApolloServer<Context>({
    schema: requireScopes(
      refuseIllFormedStrings(answerOutagesInPayloads(buildSubgraphSchema([{ typeDefs: options.typeDefs, resolvers: options.resolvers }]))),
      options.typeDefs,
    ),
    formatError: maskErrors(logger),
    includeStacktraceInErrorResponses: false,
    // The process's own signal handler drains and stops every server in order.
    stopOnTerminationSignals: false,
    // Inline traces would hand per-field timings to whoever calls the subgraph. No field has a
    // cache hint and no answer is cached (every request is an authenticated POST), so the cache
    // control plugin Apollo installs by default would only wrap every field's resolver.
    plugins: [fastifyApolloDrainPlugin(app), ApolloServerPluginInlineTraceDisabled(), ApolloServerPluginCacheControlDisabled(), requestLogPlugin(), outcomeUnknownPlugin()],
  });
  await apollo.start();

  // Verified once per request, before the body is read; the context takes the identity from here.
  const callers = new WeakMap<FastifyRequest, { caller: CallerIdentity; assertion: string }>();
  const verifier = new AssertionVerifier(config.assertionPublicKey);
  const asserted = new Set(['/graphql', ...callerRoutes.map((route) => route.contract.path)]);
  app.addHook('onRequest', async (request, reply) => {
    if (!asserted.has(request.routeOptions.url ?? '')) return;
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
    return observeContext(request, options.createContext({ ...verified, requestId: String(request.id), log: request.log }));
  };

  for (const route of callerRoutes) {
    app.post(route.contract.path, async (request, reply) => {
      const input = route.contract.input.safeParse(request.body);
      if (!input.success) {
        const [issue] = input.error.issues;
        return reply.code(400).send({ detail: issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'invalid body' });
      }
      const verified = callers.get(request)!;
      observeCaller(request, verified.caller);
      const missing = missingScope(scopeSet(verified.caller.scopes), route.contract.requiredScopes);
      if (missing !== undefined) return reply.code(403).send({ detail: `This API key lacks the scope ${missing}` });
      return route.handle(input.data, options.createContext({ ...verified, requestId: String(request.id), log: request.log }));
    });
  }

  await app.register(fastifyApollo(apollo), {
    context,
    method: ['POST'],
    path: '/graphql',
  });
  addHealthRoutes(app, options.isReady);
  await options.registerRoutes?.(app);

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
