import { callSubgraph, SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import { FillsApplyFillDocument, type FillsApplyFillMutation, type FillsApplyFillMutationVariables } from './generated/orders-calls.ts';

/** How fills reaches the orders subgraph, for the caller of one request. */
export interface OrdersLink {
  url: string;
  /** The most the call may take: well inside the gateway's wait for fills, so the client gets a payload error, not a timeout. */
  timeoutMs: number;
  assertion: string;
  requestId: string;
}

/**
 * Orders' verdict, with the fill as orders recorded it and the order as it answered: every field the
 * fills subgraph `@provides` on `RecordFillPayload.orderSubmission` (calls/apply-fill.graphql), plus
 * the strategy id the fill copies.
 */
export type AppliedFillVerdict = FillsApplyFillMutation['applyFill'];

/** The order in orders' answer: its state after the verdict, as `RecordFillPayload.orderSubmission` hands it on. */
export type AppliedOrder = NonNullable<AppliedFillVerdict['orderSubmission']>;

/**
 * Asks orders to decide and record the fill: one statement there, idempotent per execution id, so a
 * retry after a timeout (when the call may or may not have committed) is always safe.
 */
export async function applyFillToOrder(link: OrdersLink, fill: FillsApplyFillMutationVariables['input']): Promise<AppliedFillVerdict> {
  const response = await callSubgraph({
    caller: 'fills',
    subgraph: 'orders',
    url: link.url,
    assertion: link.assertion,
    requestId: link.requestId,
    timeoutMs: link.timeoutMs,
    document: FillsApplyFillDocument,
    variables: { input: fill },
  });
  // An answer with errors and no data is a failure of the orders subgraph, not a verdict on the fill.
  if (response.data === null || response.data === undefined || (response.errors && response.errors.length > 0)) {
    const messages = response.errors?.map((error) => error.message).join('; ') ?? 'no data';
    throw new SubgraphUnavailableError(`orders answered with errors: ${messages}`);
  }
  return response.data.applyFill;
}
