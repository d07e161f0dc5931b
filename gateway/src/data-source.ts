import { RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { Fetcher, FetcherResponse } from '@apollo/utils.fetcher';
import { GraphQLError } from 'graphql';
import { ASSERTION_HEADER, type CallerIdentity } from '@ots/shared/assertion';
import { HttpCallError, postJson, type HttpAnswer } from '@ots/shared/http-client';
import { timedSubgraphFetch } from '@ots/shared/metrics';
import { OUTCOME_UNKNOWN_EXTENSION } from '@ots/shared/outage-payloads';
import { REQUEST_ID_HEADER } from '@ots/shared/subgraph-server';

export interface GatewayContext {
  caller: CallerIdentity;
  assertion: string;
  requestId: string;
  /** Subgraphs that did not answer during this request. */
  unavailableServices: Set<string>;
  /**
   * Those of them that may have acted on the request though they did not answer: it was sent (a
   * timeout, a reset, a 5xx), and a subgraph runs on after the gateway gives up. The others were
   * never reached (connection refused, a name that does not resolve), so nothing of theirs ran. Also
   * a subgraph that answered an outage payload whose write may have committed (its database
   * connection broke mid-statement: OUTCOME_UNKNOWN_EXTENSION).
   */
  servicesThatMayHaveRun: Set<string>;
}

/** SERVICE_UNAVAILABLE, knowing whether the request may have reached the subgraph. */
class SubgraphUnavailable extends GraphQLError {
  constructor(
    serviceName: string,
    readonly mayHaveRun: boolean,
  ) {
    super(`The ${serviceName} service is temporarily unavailable`, { extensions: { code: 'SERVICE_UNAVAILABLE' } });
  }
}

/**
 * What Apollo's data source reads of an answer (status, two headers, the body), over the shared
 * HTTP client (`postJson`, see `@ots/shared/http-client` for why not `fetch`).
 */
function fetcherResponse(url: string, answer: HttpAnswer): FetcherResponse {
  const header = (name: string) => {
    const value = answer.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : (value ?? null);
  };
  const response = {
    url,
    status: answer.status,
    ok: answer.status >= 200 && answer.status < 300,
    statusText: '',
    redirected: false,
    bodyUsed: false,
    headers: { get: header, has: (name: string) => header(name) !== null },
    text: async () => answer.body,
    json: async () => JSON.parse(answer.body) as unknown,
    clone: () => response,
  };
  return response as unknown as FetcherResponse;
}

/**
 * Each subgraph fetch carries the signed assertion and the request id, and gives up after the
 * subgraph timeout. A subgraph that does not answer, or answers 5xx (e.g. while it stops), is
 * reported as SERVICE_UNAVAILABLE and noted in the context, so its fields' errors name those fields,
 * with whether the request may have reached it (for Idempotency-Key: a change may have committed).
 */
export class AuthenticatedDataSource extends RemoteGraphQLDataSource<GatewayContext> {
  constructor(
    readonly serviceName: string,
    url: string,
    timeoutMs: number,
  ) {
    super({
      url,
      fetcher: (async (input: string, init: { headers: Record<string, string>; body: string }) => {
        try {
          const answer = await timedSubgraphFetch('gateway', serviceName, () => postJson({ url: input, headers: init.headers, body: init.body, timeoutMs }));
          return fetcherResponse(input, answer);
        } catch (error) {
          throw new SubgraphUnavailable(serviceName, !(error instanceof HttpCallError && error.notSent));
        }
      }) as unknown as Fetcher,
    });
  }

  /** A subgraph that already failed this request is not waited for again (a plan may call it twice). */
  override async process(options: GraphQLDataSourceProcessOptions<GatewayContext>) {
    if ('context' in options && options.context.unavailableServices?.has(this.serviceName)) throw new SubgraphUnavailable(this.serviceName, false);
    return super.process(options);
  }

  override willSendRequest({ request, context }: GraphQLDataSourceProcessOptions<GatewayContext>) {
    request.http?.headers.set(ASSERTION_HEADER, context.assertion);
    request.http?.headers.set(REQUEST_ID_HEADER, context.requestId);
  }

  override async errorFromResponse(response: FetcherResponse) {
    return response.status >= 500 ? new SubgraphUnavailable(this.serviceName, true) : super.errorFromResponse(response);
  }

  /** A subgraph's outage payload that may hide a committed write (OUTCOME_UNKNOWN_EXTENSION) counts as one that may have run. */
  override didReceiveResponse({ response, context }: Parameters<NonNullable<RemoteGraphQLDataSource<GatewayContext>['didReceiveResponse']>>[0]) {
    if (response.extensions?.[OUTCOME_UNKNOWN_EXTENSION] === true) context.servicesThatMayHaveRun.add(this.serviceName);
    return response;
  }

  override didEncounterError(error: Error, _request: unknown, _response?: unknown, context?: GatewayContext) {
    if (!(error instanceof SubgraphUnavailable) || !context) return;
    context.unavailableServices.add(this.serviceName);
    if (error.mayHaveRun) context.servicesThatMayHaveRun.add(this.serviceName);
  }
}
