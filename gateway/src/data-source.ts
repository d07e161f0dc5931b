import { RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { Fetcher, FetcherResponse } from '@apollo/utils.fetcher';
import { GraphQLError } from 'graphql';
import { ASSERTION_HEADER, type CallerIdentity } from '@ots/shared/assertion';
import { timedSubgraphFetch } from '@ots/shared/metrics';
import { REQUEST_ID_HEADER } from '@ots/shared/subgraph-server';

export interface GatewayContext {
  caller: CallerIdentity;
  assertion: string;
  requestId: string;
  /** Subgraphs that did not answer during this request. */
  unavailableServices: Set<string>;
}

function unavailable(serviceName: string): GraphQLError {
  return new GraphQLError(`The ${serviceName} service is temporarily unavailable`, { extensions: { code: 'SERVICE_UNAVAILABLE' } });
}

/**
 * Each subgraph fetch carries the signed assertion and the request id, and gives up after the
 * subgraph timeout. A subgraph that does not answer, or answers 5xx (e.g. while it stops), is
 * reported as SERVICE_UNAVAILABLE and noted in the context, so its fields' errors name those fields.
 */
export class AuthenticatedDataSource extends RemoteGraphQLDataSource<GatewayContext> {
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
