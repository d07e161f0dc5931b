import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type DocumentNode } from 'graphql';
import { ASSERTION_HEADER } from './assertion.ts';
import { postJson, type HttpAnswer } from './http-client.ts';
import { timedSubgraphFetch } from './metrics.ts';
import { REQUEST_ID_HEADER } from './subgraph-server.ts';

/** The other subgraph did not answer in time, or answered with something other than GraphQL. */
export class SubgraphUnavailableError extends Error {}

export interface SubgraphCall<Result, Variables> {
  /** The calling and the called subgraph's names, for the subgraph fetch metrics. */
  caller: string;
  subgraph: string;
  url: string;
  /** A document generated from the called subgraph's schema (`npm run codegen`), typed by its result and variables. */
  document: TypedDocumentNode<Result, Variables>;
  variables: Variables;
  /** The caller's assertion, forwarded so that the callee scopes the answer to the same account. */
  assertion: string;
  requestId: string;
  timeoutMs: number;
}

export interface SubgraphResponse<T> {
  data: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/** Each generated document is printed once, on its first call. */
const printed = new WeakMap<DocumentNode, string>();

function queryText(document: DocumentNode): string {
  let text = printed.get(document);
  if (text === undefined) {
    text = print(document);
    printed.set(document, text);
  }
  return text;
}

/**
 * A subgraph-to-subgraph GraphQL call with a hard timeout. Transport failures, timeouts and
 * non-GraphQL answers all become SubgraphUnavailableError, which callers map to TEMPORARILY_UNAVAILABLE.
 */
export async function callSubgraph<Result, Variables>(call: SubgraphCall<Result, Variables>): Promise<SubgraphResponse<Result>> {
  let answer: HttpAnswer;
  try {
    answer = await timedSubgraphFetch(call.caller, call.subgraph, () =>
      postJson({
        url: call.url,
        headers: { [ASSERTION_HEADER]: call.assertion, [REQUEST_ID_HEADER]: call.requestId },
        body: JSON.stringify({ query: queryText(call.document), variables: call.variables }),
        timeoutMs: call.timeoutMs,
      }),
    );
  } catch (error) {
    throw new SubgraphUnavailableError(`${call.url} did not answer: ${(error as Error).message}`);
  }
  if (answer.status < 200 || answer.status >= 300) throw new SubgraphUnavailableError(`${call.url} answered HTTP ${answer.status}`);
  try {
    return JSON.parse(answer.body) as SubgraphResponse<Result>;
  } catch {
    throw new SubgraphUnavailableError(`${call.url} answered a body that is not JSON`);
  }
}
