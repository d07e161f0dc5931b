import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { callSubgraph, SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import { FillsApplyFillDocument, type FillsApplyFillMutation, type FillsApplyFillMutationVariables } from './generated/orders-calls.ts';

/** How fills reaches the orders subgraph, for one caller (the request's, or one the sweeper minted). */
export interface OrdersLink {
  url: string;
  /** The most one call may take. */
  timeoutMs: number;
  assertion: string;
  requestId: string;
  /**
   * Epoch milliseconds by which every call through this link must be over: a call gets what remains,
   * and none starts after it. Set by `withDeadline` so that the calls of one recordFill share a budget.
   */
  deadline?: number;
}

/**
 * The link with one deadline, `budgetMs` from now (default: its timeoutMs), for all the calls made
 * through it. The gateway abandons the whole fetch of fills after the subgraph timeout, so recordFill's
 * call to orders must end well before it for the client to get a payload rather than an error.
 */
export function withDeadline(link: OrdersLink, budgetMs: number = link.timeoutMs): OrdersLink {
  return { ...link, deadline: Date.now() + budgetMs };
}

/** What a call through the link may take now: its timeout, capped by what remains of its deadline. */
export function timeLeftMs(link: OrdersLink, now: number = Date.now()): number {
  return link.deadline === undefined ? link.timeoutMs : Math.min(link.timeoutMs, link.deadline - now);
}

async function call<Result, Variables>(link: OrdersLink, document: TypedDocumentNode<Result, Variables>, variables: Variables): Promise<Result> {
  const timeoutMs = timeLeftMs(link);
  if (timeoutMs <= 0) throw new SubgraphUnavailableError(`no time left to call orders at ${link.url}`);
  const response = await callSubgraph({ caller: 'fills', subgraph: 'orders', url: link.url, assertion: link.assertion, requestId: link.requestId, timeoutMs, document, variables });
  // An answer with errors and no data is a failure of the orders subgraph, not a verdict on the fill.
  if (response.data === null || response.data === undefined || (response.errors && response.errors.length > 0)) {
    const messages = response.errors?.map((error) => error.message).join('; ') ?? 'no data';
    throw new SubgraphUnavailableError(`orders answered with errors: ${messages}`);
  }
  return response.data;
}

/**
 * Orders' verdict, with the order as it answered: every field the fills subgraph `@provides` on
 * `RecordFillPayload.orderSubmission` (calls/apply-fill.graphql), plus the strategy id the fill copies.
 */
export type AppliedFillVerdict = FillsApplyFillMutation['applyFill'];

/**
 * Asks orders to count the fill: one transaction there, idempotent per fill id, so a retry after a
 * timeout (when the first call may or may not have committed) is always safe.
 */
export async function applyFillToOrder(
  link: OrdersLink,
  fill: FillsApplyFillMutationVariables['input'],
): Promise<AppliedFillVerdict> {
  const data = await call(link, FillsApplyFillDocument, { input: fill });
  return data.applyFill;
}
