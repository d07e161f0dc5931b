import { ASSERTION_HEADER } from './assertion.ts';
import { timedSubgraphFetch } from './metrics.ts';
import { REQUEST_ID_HEADER } from './subgraph-server.ts';

/** The other subgraph did not answer in time, or answered with something other than GraphQL. */
export class SubgraphUnavailableError extends Error {}

export interface SubgraphCall {
  /** The calling and the called subgraph's names, for the subgraph fetch metrics. */
  caller: string;
  subgraph: string;
  url: string;
  query: string;
  variables?: Record<string, unknown>;
  /** The caller's assertion, forwarded so that the callee scopes the answer to the same account. */
  assertion: string;
  requestId: string;
  timeoutMs: number;
}

export interface SubgraphResponse<T> {
  data: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * A subgraph-to-subgraph GraphQL call with a hard timeout. Transport failures, timeouts and
 * non-GraphQL answers all become SubgraphUnavailableError, which callers map to TEMPORARILY_UNAVAILABLE.
 */
export async function callSubgraph<T>(call: SubgraphCall): Promise<SubgraphResponse<T>> {
  let response: Response;
  try {
    response = await timedSubgraphFetch(call.caller, call.subgraph, () => fetch(call.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [ASSERTION_HEADER]: call.assertion,
        [REQUEST_ID_HEADER]: call.requestId,
      },
      body: JSON.stringify({ query: call.query, variables: call.variables ?? {} }),
      signal: AbortSignal.timeout(call.timeoutMs),
    }));
  } catch (error) {
    throw new SubgraphUnavailableError(`${call.url} did not answer: ${(error as Error).message}`);
  }
  if (!response.ok) throw new SubgraphUnavailableError(`${call.url} answered HTTP ${response.status}`);
  try {
    return (await response.json()) as SubgraphResponse<T>;
  } catch {
    throw new SubgraphUnavailableError(`${call.url} answered a body that is not JSON`);
  }
}
