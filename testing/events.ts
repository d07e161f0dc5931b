import { data, type Client } from './requests.ts';
import type { TestStack } from './stack.ts';

/** Reading the event feed in tests: every producer's tests wait for their events here. */

export const EVENT_FIELDS = 'id type occurredAt data';

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

/** Creates a webhook endpoint for the client's account and returns its signing secret (shown once). */
export async function createWebhookEndpoint(stack: TestStack, client: Pick<Client, 'apiKey'>, input: { url: string; eventTypes?: string[] }): Promise<string> {
  const result = await data(
    stack,
    client,
    'mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { signingSecret error { code message } } }',
    { input },
  );
  const payload = result.createWebhookEndpoint as { signingSecret: string | null; error: { code: string; message: string } | null };
  if (payload.error || !payload.signingSecret) throw new Error(`creating a webhook endpoint failed: ${JSON.stringify(payload.error)}`);
  return payload.signingSecret;
}
