import { expect } from 'vitest';
import { data as dataOf, type Client } from '../../../testing/requests.ts';
import type { TestStack } from '../../../testing/stack.ts';

export { EVENT_FIELDS, listEvents, waitForEvents, type EventResult } from '../../../testing/events.ts';

export const data = (stack: TestStack, client: Pick<Client, 'apiKey'>, query: string, variables?: Record<string, unknown>) =>
  dataOf(stack, client, query, variables);

export const ENDPOINT_FIELDS = 'id url eventTypes description status disabledReason createdAt';
export const PAYLOAD_ERROR_FIELDS = 'error { code field message }';

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


