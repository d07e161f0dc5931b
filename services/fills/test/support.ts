import { expect } from 'vitest';
import { signAssertion } from '@ots/shared/assertion';
import type { TestStack } from '../../../testing/stack.ts';
import { data, type Client } from '../../../testing/requests.ts';

export { data, NO_RATE_LIMIT_ENV as STACK_ENV, topLevelError, type Client } from '../../../testing/requests.ts';

/** Helpers of the fills end-to-end tests: requests through the gateway as a client sends them. */



export const FILL_FIELDS = 'id executionId symbol side quantity price fee liquidity executedAt recordedAt orderSubmission { id }';
export const ORDER_FIELDS = 'id symbol side status quantity filledQuantity remainingQuantity averageFillPrice';

export interface Fill {
  id: string;
  executionId: string;
  symbol: string;
  side: string;
  quantity: string;
  price: string;
  fee: string;
  liquidity: string;
  executedAt: string;
  recordedAt: string;
  orderSubmission: { id: string };
}

export interface Order {
  id: string;
  symbol: string;
  side: string;
  status: string;
  quantity: string;
  filledQuantity: string;
  remainingQuantity: string;
  averageFillPrice: string | null;
}

export interface PayloadError {
  code: string;
  field: string | null;
  message: string;
}

export interface RecordFillPayload {
  fill: Fill | null;
  orderSubmission: Order | null;
  error: PayloadError | null;
}



export async function recordFill(stack: TestStack, client: Client, input: Record<string, unknown>): Promise<RecordFillPayload> {
  const result = await data(
    stack,
    client,
    `mutation ($input: RecordFillInput!) {
      recordFill(input: $input) { fill { ${FILL_FIELDS} } orderSubmission { ${ORDER_FIELDS} } error { code field message } }
    }`,
    { input },
  );
  return result.recordFill;
}

/** Records and returns the fill, failing the test on a payload error. */
export async function recorded(stack: TestStack, client: Client, input: Record<string, unknown>): Promise<RecordFillPayload & { fill: Fill; orderSubmission: Order }> {
  const payload = await recordFill(stack, client, input);
  expect(payload.error).toBeNull();
  return payload as RecordFillPayload & { fill: Fill; orderSubmission: Order };
}

export async function submitOrder(stack: TestStack, client: Client, input: Record<string, unknown> = {}): Promise<Order> {
  const result = await data(
    stack,
    client,
    `mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { ${ORDER_FIELDS} } error { code field message } } }`,
    { input: { symbol: 'ACME', side: 'BUY', type: 'MARKET', quantity: '10', ...input } },
  );
  expect(result.submitOrder.error).toBeNull();
  return result.submitOrder.orderSubmission;
}

export async function createStrategy(stack: TestStack, client: Client, name: string): Promise<string> {
  const result = await data(stack, client, `mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { id } error { code } } }`, {
    input: { name },
  });
  expect(result.createStrategy.error).toBeNull();
  return result.createStrategy.strategy.id;
}

export async function orderState(stack: TestStack, client: Client, id: string): Promise<(Order & { fills: Fill[] }) | null> {
  const result = await data(stack, client, `query ($id: ID!) { orderSubmission(id: $id) { ${ORDER_FIELDS} fills { ${FILL_FIELDS} } } }`, { id });
  return result.orderSubmission;
}

export async function fillById(stack: TestStack, client: Client, id: string): Promise<Fill | null> {
  const result = await data(stack, client, `query ($id: ID!) { fill(id: $id) { ${FILL_FIELDS} } }`, { id });
  return result.fill;
}

/** Listings leave out `orderSubmission`, which keeps a variable-sized page within the gateway's cost limit. */
const LIST_FIELDS = 'id executionId symbol side quantity price fee liquidity executedAt recordedAt';

export interface FillPage {
  nodes: Omit<Fill, 'orderSubmission'>[];
  edges: { cursor: string }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export async function listFills(stack: TestStack, client: Client, args: Record<string, unknown> = {}): Promise<FillPage> {
  const result = await data(
    stack,
    client,
    `query ($filter: FillFilter, $first: Int, $after: String) {
      listFills(filter: $filter, first: $first, after: $after) {
        nodes { ${LIST_FIELDS} } edges { cursor } pageInfo { hasNextPage endCursor }
      }
    }`,
    args,
  );
  return result.listFills;
}

/** A request straight to a subgraph, as a subgraph-to-subgraph call sends it: with a gateway-signed assertion. */
export async function callSubgraphAs(stack: TestStack, client: Client, url: string, query: string, variables?: Record<string, unknown>) {
  const assertion = signAssertion(stack.config.assertionPrivateKey!, { accountId: client.accountId, apiKeyId: client.apiKeyId }, 60);
  return stack.post(JSON.stringify({ query, variables }), { 'content-type': 'application/json', 'x-gateway-assertion': assertion }, url);
}

/** Polls until `check` passes or the time is up; convergence is asynchronous by design. */
export async function eventually(check: () => Promise<void>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
