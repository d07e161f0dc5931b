import { callSubgraph, SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import type { ApplyOutcome, OrderView } from './domain.ts';

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
 * through it. recordFill makes two calls to orders, and the gateway abandons the whole fetch of fills
 * after the subgraph timeout; each call allowed the full timeout would outlast it.
 */
export function withDeadline(link: OrdersLink, budgetMs: number = link.timeoutMs): OrdersLink {
  return { ...link, deadline: Date.now() + budgetMs };
}

/** What a call through the link may take now: its timeout, capped by what remains of its deadline. */
export function timeLeftMs(link: OrdersLink, now: number = Date.now()): number {
  return link.deadline === undefined ? link.timeoutMs : Math.min(link.timeoutMs, link.deadline - now);
}

const ORDER_FIELDS = 'id symbol side status remainingQuantity strategy { id }';

const ORDER_QUERY = `query FillsOrderForFill($id: ID!) {
  orderSubmission(id: $id) { ${ORDER_FIELDS} }
}`;

const APPLY_FILL_MUTATION = `mutation FillsApplyFill($input: ApplyFillInput!) {
  applyFill(input: $input) { outcome orderSubmission { ${ORDER_FIELDS} } }
}`;

async function call<T>(link: OrdersLink, query: string, variables: Record<string, unknown>): Promise<T> {
  const timeoutMs = timeLeftMs(link);
  if (timeoutMs <= 0) throw new SubgraphUnavailableError(`no time left to call orders at ${link.url}`);
  const response = await callSubgraph<T>({ caller: 'fills', subgraph: 'orders', url: link.url, assertion: link.assertion, requestId: link.requestId, timeoutMs, query, variables });
  // An answer with errors and no data is a failure of the orders subgraph, not a verdict on the fill.
  if (response.data === null || response.data === undefined || (response.errors && response.errors.length > 0)) {
    const messages = response.errors?.map((error) => error.message).join('; ') ?? 'no data';
    throw new SubgraphUnavailableError(`orders answered with errors: ${messages}`);
  }
  return response.data;
}

/** The order as the caller's account sees it; null when absent or another account's. */
export async function readOrder(link: OrdersLink, orderSubmissionId: string): Promise<OrderView | null> {
  const data = await call<{ orderSubmission: OrderView | null }>(link, ORDER_QUERY, { id: orderSubmissionId });
  return data.orderSubmission;
}

export interface AppliedFillVerdict {
  outcome: ApplyOutcome;
  orderSubmission: OrderView | null;
}

/**
 * Asks orders to count the fill: one transaction there, idempotent per fill id, so a retry after a
 * timeout (when the first call may or may not have committed) is always safe.
 */
export async function applyFillToOrder(
  link: OrdersLink,
  fill: { fillId: string; orderSubmissionId: string; quantity: string; price: string },
): Promise<AppliedFillVerdict> {
  const data = await call<{ applyFill: AppliedFillVerdict }>(link, APPLY_FILL_MUTATION, { input: fill });
  return data.applyFill;
}
