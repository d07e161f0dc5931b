import { expect } from 'vitest';
import { data as dataOf, type Client } from '@ots/shared/testing/requests';
import type { TestStack } from '@ots/shared/testing/stack';

export const data = (stack: TestStack, client: Pick<Client, 'apiKey'>, query: string, variables?: Record<string, unknown>) =>
  dataOf(stack, client, query, variables);

export const ENDPOINT_FIELDS = 'id url eventTypes description status disabledReason createdAt';
export const PAYLOAD_ERROR_FIELDS = 'error { code field message }';
export const EVENT_FIELDS = 'id type occurredAt data';

export interface EndpointResult {
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  status: 'ENABLED' | 'DISABLED';
  disabledReason: string | null;
  createdAt: string;
}

export interface PayloadErrorResult {
  code: string;
  field: string | null;
  message: string;
}

export async function tryCreateEndpoint(stack: TestStack, client: Pick<Client, 'apiKey'>, input: Record<string, unknown>) {
  const result = await data(
    stack,
    client,
    `mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { webhookEndpoint { ${ENDPOINT_FIELDS} } signingSecret ${PAYLOAD_ERROR_FIELDS} } }`,
    { input },
  );
  return result.createWebhookEndpoint as { webhookEndpoint: EndpointResult | null; signingSecret: string | null; error: PayloadErrorResult | null };
}

/** Creates an endpoint and returns it with its secret, failing the test on a payload error. */
export async function createEndpoint(stack: TestStack, client: Pick<Client, 'apiKey'>, input: Record<string, unknown>) {
  const payload = await tryCreateEndpoint(stack, client, input);
  expect(payload.error).toBeNull();
  return { endpoint: payload.webhookEndpoint!, secret: payload.signingSecret! };
}

export async function createStrategy(stack: TestStack, client: Pick<Client, 'apiKey'>, name: string): Promise<{ id: string }> {
  const result = await data(stack, client, `mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { id } ${PAYLOAD_ERROR_FIELDS} } }`, {
    input: { name },
  });
  expect(result.createStrategy.error).toBeNull();
  return result.createStrategy.strategy;
}

export interface EventResult {
  id: string;
  type: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

export async function listEvents(stack: TestStack, client: Pick<Client, 'apiKey'>, variables: Record<string, unknown> = {}) {
  const result = await data(
    stack,
    client,
    `query ($filter: EventFilter, $first: Int, $after: String) { listEvents(filter: $filter, first: $first, after: $after) { nodes { ${EVENT_FIELDS} } edges { cursor } pageInfo { hasNextPage endCursor } } }`,
    variables,
  );
  return result.listEvents as { nodes: EventResult[]; edges: { cursor: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

/** Pages listEvents until `count` events have arrived (the relay forwards them asynchronously). */
export async function waitForEvents(stack: TestStack, client: Pick<Client, 'apiKey'>, count: number, timeoutMs = 10_000): Promise<EventResult[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const page = await listEvents(stack, client, { first: 200 });
    if (page.nodes.length >= count) return page.nodes;
    if (Date.now() > deadline) throw new Error(`expected ${count} events, the feed has ${page.nodes.length}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
