import type { FastifyRequest } from 'fastify';

export interface GraphqlBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
  extensions?: unknown;
}

/** The request's JSON object body, before Apollo reads it; undefined for anything else (a batch, no body). */
export function graphqlBody(request: FastifyRequest): GraphqlBody | undefined {
  const body = request.body;
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as GraphqlBody) : undefined;
}

export function operationNameOf(body: GraphqlBody): string | undefined {
  return typeof body.operationName === 'string' ? body.operationName : undefined;
}

/** Apollo's automatic persisted queries: a hash in place of the document, which this gateway does not keep. */
export function asksForPersistedQuery(body: GraphqlBody): boolean {
  return typeof body.extensions === 'object' && body.extensions !== null && 'persistedQuery' in body.extensions;
}
