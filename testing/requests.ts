import { expect } from 'vitest';
import type { TestStack } from './stack.ts';

/** One client of the API: an account and one of its keys, as `createAccountWithKey` returns them. */
export interface Client {
  accountId: string;
  apiKeyId: string;
  apiKey: string;
}

/** For files that send bursts far above the per-key rate limit, which they do not test. */
export const NO_RATE_LIMIT_ENV = { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' };

/** Sends through the gateway and returns `data`, failing the test on any top-level error. */
export async function data(stack: TestStack, client: Pick<Client, 'apiKey'>, query: string, variables?: Record<string, unknown>) {
  const result = await stack.graphql(client.apiKey, query, variables);
  expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
  expect(result.status).toBe(200);
  return result.body.data;
}

/** The first top-level error a request fails with. */
export async function topLevelError(stack: TestStack, client: Pick<Client, 'apiKey'>, query: string, variables?: Record<string, unknown>) {
  const result = await stack.graphql(client.apiKey, query, variables);
  expect(result.body.errors?.length, JSON.stringify(result.body)).toBeGreaterThan(0);
  return result.body.errors[0] as { message: string; path?: string[]; extensions: { code: string; argumentName?: string } };
}
