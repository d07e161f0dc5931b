import { expect } from 'vitest';
import { applyFillRoute, type FillToApplyWire, type FillVerdict } from '@ots/shared/fill-application';
import type { ApiClient } from '../../../testing/client.ts';
import type { HttpResult } from '../../../testing/stack.ts';

/** The internal call the fills subgraph makes to orders, which the public API (and so testing/operations) does not have. */

/** A request straight to the orders subgraph, as the fills subgraph sends it: with a gateway-signed assertion. */
export function callOrdersSubgraph(client: ApiClient, query: string, variables?: Record<string, unknown>) {
  return client.callSubgraph(client.stack.urls.orders, query, variables);
}

/** Any body, POSTed to orders' fill route as fills sends it. */
export function postApplyFill(client: ApiClient, body: unknown): Promise<HttpResult> {
  return client.postToSubgraph(new URL(applyFillRoute.path, client.stack.urls.orders).href, body);
}

/** Applies a fill as the fills subgraph does (executed now unless `executedAt` says otherwise), failing the test on a refusal. */
export async function applyFill(client: ApiClient, fill: Omit<FillToApplyWire, 'executedAt'> & { executedAt?: string }): Promise<FillVerdict> {
  const result = await postApplyFill(client, { executedAt: new Date().toISOString(), ...fill });
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body;
}
