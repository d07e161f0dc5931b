import { applyFillRoute, type FillToApplyWire, type FillVerdict } from '@ots/shared/fill-application';
import { callSubgraphRoute, SubgraphUnavailableError } from '@ots/shared/subgraph-client';

/** How fills reaches the orders subgraph, for one caller (the request's, or one the sweeper minted). */
export interface OrdersLink {
  /** The orders subgraph's /graphql URL; its routes are on the same server. */
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

/**
 * Asks orders to count the fill (its `applyFillRoute`): one transaction there, idempotent per fill id,
 * so a retry after a timeout (when the first call may or may not have committed) is always safe.
 * Orders' verdict comes with the order as it answered: every field the fills subgraph `@provides`
 * on `RecordFillPayload.orderSubmission`, plus the strategy id the fill copies.
 */
export async function applyFillToOrder(link: OrdersLink, fill: FillToApplyWire): Promise<FillVerdict> {
  const timeoutMs = timeLeftMs(link);
  if (timeoutMs <= 0) throw new SubgraphUnavailableError(`no time left to call orders at ${link.url}`);
  return callSubgraphRoute({
    caller: 'fills',
    subgraph: 'orders',
    subgraphUrl: link.url,
    route: applyFillRoute,
    assertion: link.assertion,
    requestId: link.requestId,
    timeoutMs,
    input: fill,
  });
}
