import { expect } from 'vitest';
import { signAssertion } from '@ots/shared/assertion';
import type { TestStack } from '../../../testing/stack.ts';
import { data, type Client } from '../../../testing/requests.ts';

export { data, NO_RATE_LIMIT_ENV as STACK_ENV, topLevelError, type Client } from '../../../testing/requests.ts';

/** Helpers of the orders end-to-end tests: requests through the gateway, and the internal calls fills makes. */

export const ORDER_FIELDS = `id clientOrderId strategy { id } symbol side type timeInForce quantity limitPrice stopPrice status
  filledQuantity remainingQuantity averageFillPrice submittedAt updatedAt cancelledAt`;
export const ERROR_FIELDS = 'error { code field message }';


export interface Order {
  id: string;
  clientOrderId: string | null;
  strategy: { id: string } | null;
  symbol: string;
  side: string;
  type: string;
  timeInForce: string;
  quantity: string;
  limitPrice: string | null;
  stopPrice: string | null;
  status: string;
  filledQuantity: string;
  remainingQuantity: string;
  averageFillPrice: string | null;
  submittedAt: string;
  updatedAt: string;
  cancelledAt: string | null;
}

export interface PayloadError {
  code: string;
  field: string | null;
  message: string;
}

export interface Page {
  nodes: Order[];
  edges: { cursor: string }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}




export async function submit(stack: TestStack, client: Client, input: Record<string, unknown>) {
  const result = await data(
    stack,
    client,
    `mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { ${ORDER_FIELDS} } ${ERROR_FIELDS} } }`,
    { input },
  );
  return result.submitOrder as { orderSubmission: Order | null; error: PayloadError | null };
}

/** Submits and returns the order, failing the test on a payload error. */
export async function submitted(stack: TestStack, client: Client, input: Record<string, unknown> = {}): Promise<Order> {
  const payload = await submit(stack, client, { symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '1', ...input });
  expect(payload.error).toBeNull();
  return payload.orderSubmission!;
}

export async function cancel(stack: TestStack, client: Client, id: string) {
  const result = await data(
    stack,
    client,
    `mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { ${ORDER_FIELDS} } ${ERROR_FIELDS} } }`,
    { id },
  );
  return result.cancelOrderSubmission as { orderSubmission: Order | null; error: PayloadError | null };
}

/** One page; `edges` carry only their cursors, which keeps a 200-row page within the gateway's cost limit. */
export async function list(stack: TestStack, client: Client, args: Record<string, unknown> = {}): Promise<Page> {
  const result = await data(
    stack,
    client,
    `query ($filter: OrderSubmissionFilter, $orderBy: OrderSubmissionOrder, $first: Int, $after: String) {
      listOrderSubmissions(filter: $filter, orderBy: $orderBy, first: $first, after: $after) {
        nodes { ${ORDER_FIELDS} } edges { cursor } pageInfo { hasNextPage endCursor }
      }
    }`,
    args,
  );
  return result.listOrderSubmissions;
}

/** Every page of a listing, following endCursor. */
export async function listAll(stack: TestStack, client: Client, args: Record<string, unknown> = {}): Promise<Order[]> {
  const orders: Order[] = [];
  let after: string | null = null;
  do {
    const page: Page = await list(stack, client, { ...args, first: 200, after });
    orders.push(...page.nodes);
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
  } while (after);
  return orders;
}

/** A request straight to the orders subgraph, as the fills subgraph sends it: with a gateway-signed assertion. */
export async function callOrdersSubgraph(stack: TestStack, client: Client, query: string, variables?: Record<string, unknown>) {
  const assertion = signAssertion(stack.config.assertionPrivateKey!, { accountId: client.accountId, apiKeyId: client.apiKeyId }, 60);
  return stack.post(JSON.stringify({ query, variables }), { 'content-type': 'application/json', 'x-gateway-assertion': assertion }, stack.urls.orders);
}

export interface AppliedFill {
  outcome: string;
  orderSubmission: Order | null;
}

export async function applyFill(
  stack: TestStack,
  client: Client,
  input: { fillId: string; orderSubmissionId: string; quantity: string; price: string },
): Promise<AppliedFill> {
  const result = await callOrdersSubgraph(
    stack,
    client,
    `mutation ($input: ApplyFillInput!) { applyFill(input: $input) { outcome orderSubmission { ${ORDER_FIELDS} } } }`,
    { input },
  );
  expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
  return result.body.data.applyFill;
}
