import { expect } from 'vitest';
import { withFragments, type ApiClient, type Order } from '../../../../testing/client.ts';

/** The internal call the fills subgraph makes to orders, which the public API (and so testing/operations) does not have. */

export interface AppliedFill {
  outcome: string;
  orderSubmission: Order | null;
}

/** A request straight to the orders subgraph, as the fills subgraph sends it: with a gateway-signed assertion. */
export function callOrdersSubgraph(client: ApiClient, query: string, variables?: Record<string, unknown>) {
  return client.callSubgraph(client.stack.urls.orders, query, variables);
}

export async function applyFill(client: ApiClient, input: { executionId: string; orderSubmissionId: string; quantity: string; price: string }): Promise<AppliedFill> {
  const result = await callOrdersSubgraph(
    client,
    withFragments('mutation ($input: ApplyFillInput!) { applyFill(input: $input) { outcome orderSubmission { ...OrderFields } } }'),
    { input: { fee: '0', liquidity: 'UNKNOWN', ...input } },
  );
  expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
  return result.body.data.applyFill;
}
