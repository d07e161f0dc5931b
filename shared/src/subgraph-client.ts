import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type DocumentNode } from 'graphql';
import type { z } from 'zod';
import { ASSERTION_HEADER } from './assertion.ts';
import { postJson, type HttpAnswer } from './http-client.ts';
import { timedSubgraphFetch } from './metrics.ts';
import { REQUEST_ID_HEADER } from './subgraph-server.ts';
import type { SubgraphRouteContract } from './subgraph-route.ts';

/** The other subgraph did not answer in time, or answered with something other than what was asked for. */
export class SubgraphUnavailableError extends Error {}

/** Who calls whom, and on whose behalf: what every call from one subgraph to another carries. */
interface SubgraphLink {
  /** The calling and the called subgraph's names, for the subgraph fetch metrics. */
  caller: string;
  subgraph: string;
  url: string;
  /** The caller's assertion, forwarded so that the callee scopes the answer to the same account. */
  assertion: string;
  requestId: string;
  timeoutMs: number;
}

export interface SubgraphCall<Result, Variables> extends SubgraphLink {
  /** A document generated from the called subgraph's schema (`npm run codegen`), typed by its result and variables. */
  document: TypedDocumentNode<Result, Variables>;
  variables: Variables;
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

/** POSTs the body; a transport failure, a timeout, a status other than 2xx or a body that is not JSON all throw SubgraphUnavailableError. */
async function postToSubgraph(link: SubgraphLink, body: string): Promise<unknown> {
  const { url } = link;
  let answer: HttpAnswer;
  try {
    answer = await timedSubgraphFetch(link.caller, link.subgraph, () =>
      postJson({ url, headers: { [ASSERTION_HEADER]: link.assertion, [REQUEST_ID_HEADER]: link.requestId }, body, timeoutMs: link.timeoutMs }),
    );
  } catch (error) {
    throw new SubgraphUnavailableError(`${url} did not answer: ${(error as Error).message}`);
  }
  if (answer.status < 200 || answer.status >= 300) throw new SubgraphUnavailableError(`${url} answered HTTP ${answer.status}`);
  try {
    return JSON.parse(answer.body);
  } catch {
    throw new SubgraphUnavailableError(`${url} answered a body that is not JSON`);
  }
}

/** A subgraph-to-subgraph GraphQL call with a hard timeout; failures as in `postToSubgraph`. */
export async function callSubgraph<Result, Variables>(call: SubgraphCall<Result, Variables>): Promise<SubgraphResponse<Result>> {
  return (await postToSubgraph(call, JSON.stringify({ query: queryText(call.document), variables: call.variables }))) as SubgraphResponse<Result>;
}

export interface SubgraphRouteCall<Route extends SubgraphRouteContract> extends Omit<SubgraphLink, 'url'> {
  route: Route;
  /** The called subgraph's /graphql URL: the route is at its `path` on the same server. */
  subgraphUrl: string;
  input: z.input<Route['input']>;
}

/**
 * Calls a subgraph's route with a hard timeout. An answer that does not fit the contract is a
 * SubgraphUnavailableError like a transport failure: the callee is broken or a different version.
 */
export async function callSubgraphRoute<Route extends SubgraphRouteContract>(call: SubgraphRouteCall<Route>): Promise<z.output<Route['answer']>> {
  const url = new URL(call.route.path, call.subgraphUrl).href;
  const body = await postToSubgraph({ ...call, url }, JSON.stringify(call.input));
  const answer = call.route.answer.safeParse(body);
  if (!answer.success) throw new SubgraphUnavailableError(`${url} answered outside its contract: ${answer.error.issues[0]?.message}`);
  return answer.data as z.output<Route['answer']>;
}
