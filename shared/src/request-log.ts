import type { ApolloServerPlugin } from '@apollo/server';
import { trace } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CallerIdentity } from './assertion.ts';
import { NO_OPERATION, operationLabel, requestDuration, requestsTotal } from './metrics.ts';

/**
 * One observation per HTTP request: a log line when it is answered (request id, operation, status,
 * duration, account and key id — never the key, the variables or the body), and the request
 * metrics. Fastify's own request logging is off; this replaces it with one line per request.
 *
 * What only GraphQL execution knows (the operation, the caller, whether errors were answered)
 * reaches the observation through the Apollo context: `observeContext` ties the context value to
 * the request, and `requestLogPlugin` fills it in.
 */
interface Observation {
  operationName?: string | null;
  caller?: CallerIdentity;
  graphqlErrors: boolean;
}

type ObservedServer = 'gateway' | 'subgraph';

const byRequest = new WeakMap<FastifyRequest, Observation>();
/** A property rather than a WeakMap entry: Apollo hands plugins a shallow copy of the context value. */
const OBSERVATION = Symbol('observation');
type Observed = { [OBSERVATION]?: Observation };

function observationOf(request: FastifyRequest): Observation {
  let observation = byRequest.get(request);
  if (!observation) byRequest.set(request, (observation = { graphqlErrors: false }));
  return observation;
}

/** Returns the context, marked with the request's observation for `requestLogPlugin`. */
export function observeContext<Context extends object>(request: FastifyRequest, context: Context): Context {
  Object.defineProperty(context, OBSERVATION, { value: observationOf(request), enumerable: true, configurable: true });
  return context;
}

/** The caller of a request served outside GraphQL (a subgraph's caller route), for its log line. */
export function observeCaller(request: FastifyRequest, caller: CallerIdentity): void {
  observationOf(request).caller = caller;
}

export function requestLogPlugin(): ApolloServerPlugin<{ caller?: CallerIdentity }> {
  return {
    async requestDidStart({ contextValue }) {
      const observation = (contextValue as Observed)[OBSERVATION];
      if (!observation) return;
      observation.caller = contextValue.caller;
      return {
        async didResolveOperation({ operationName }) {
          observation.operationName = operationName;
        },
        async willSendResponse({ response }) {
          if (response.body.kind === 'single' && response.body.singleResult.errors?.length) observation.graphqlErrors = true;
        },
      };
    },
  };
}

/** What happened to a request, from its status and what GraphQL saw: a small fixed set, fit for a label. */
function outcomeOf(kind: ObservedServer, route: string | undefined, status: number, observation: Observation): string {
  if (status < 300) {
    // The gateway answers a GraphQL request without a key (Variant A) before GraphQL runs, so no
    // caller was seen. Its other routes (the console's pages and API, probes) need no key at all.
    if (kind === 'gateway' && route === '/graphql' && !observation.caller) return 'no_key';
    return observation.graphqlErrors ? 'graphql_error' : 'ok';
  }
  switch (status) {
    case 401:
      return kind === 'gateway' ? 'invalid_key' : 'invalid_assertion';
    case 403:
      return 'access_disabled';
    case 413:
    case 415:
    case 400:
      return 'bad_request';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
    case 504:
      return 'timeout';
    default:
      return status >= 500 ? 'server_error' : 'client_error';
  }
}

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);
/** Client-chosen operation names are logged shortened: a log line is no place for a 100 KiB name. */
const LOGGED_NAME_LENGTH = 100;

function clientOperationName(request: FastifyRequest): string | undefined {
  const body = request.body as { operationName?: unknown } | undefined;
  const name = body && typeof body === 'object' ? body.operationName : undefined;
  return typeof name === 'string' && name !== '' ? name.slice(0, LOGGED_NAME_LENGTH) : undefined;
}

export interface RequestLogOptions {
  /** The `service` label: `gateway`, or the subgraph's name. */
  service: string;
  kind: ObservedServer;
  /** Routes besides /graphql counted in the request metrics, each under its path as the operation. */
  operationRoutes?: readonly string[] | undefined;
}

/**
 * Adds the per-request log line and metrics to a server. The gateway's lines are at info: one per
 * client request. A subgraph's are at debug, since each of them serves part of a gateway request
 * that has its line already, under the same request id; health probes are at debug everywhere.
 */
export function observeRequests(app: FastifyInstance, options: RequestLogOptions): void {
  const operationRoutes = new Set(options.operationRoutes);
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions.url;
    const observation = observationOf(request);
    const status = reply.statusCode;
    const durationMs = reply.elapsedTime;
    const outcome = outcomeOf(options.kind, route, status, observation);
    const resolvedName = observation.operationName;
    const graphql = route === '/graphql';
    if (graphql || (route !== undefined && operationRoutes.has(route))) {
      const labels = {
        service: options.service,
        operation: !graphql ? route! : resolvedName === undefined ? NO_OPERATION : operationLabel(options.service, resolvedName),
        outcome,
      };
      requestsTotal.inc(labels);
      requestDuration.observe(labels, durationMs / 1000);
    }

    // The HTTP server span (when tracing is on) says which server this was, for which request and operation.
    const span = trace.getActiveSpan();
    span?.setAttributes({ 'ots.service': options.service, 'ots.request_id': String(request.id), ...(resolvedName ? { 'graphql.operation.name': resolvedName } : {}) });
    const line = {
      method: request.method,
      route: route ?? 'unmatched',
      operation: resolvedName ?? clientOperationName(request),
      status,
      outcome,
      durationMs: Math.round(durationMs * 10) / 10,
      accountId: observation.caller?.accountId,
      apiKeyId: observation.caller?.apiKeyId,
      ...(options.kind === 'gateway' ? { clientAddress: request.ip } : {}),
      ...(span?.isRecording() ? { traceId: span.spanContext().traceId } : {}),
    };
    const atInfo = options.kind === 'gateway' && !PROBES.has(route ?? '');
    if (atInfo) request.log.info(line, 'request completed');
    else request.log.debug(line, 'request completed');
  });
}
