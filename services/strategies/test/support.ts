import { expect } from 'vitest';
import { data as dataOf } from '../../../testing/requests.ts';
import type { TestStack } from '../../../testing/stack.ts';

/** Sends through the gateway with this key and returns `data`, failing the test on any top-level error. */
export const data = (stack: TestStack, apiKey: string, query: string, variables?: Record<string, unknown>) =>
  dataOf(stack, { apiKey }, query, variables);

export const STRATEGY_FIELDS = 'id name description status createdAt updatedAt';
export const PAYLOAD_ERROR_FIELDS = 'error { code field message }';


export interface StrategyResult {
  id: string;
  name: string;
  description: string | null;
  status: 'ACTIVE' | 'PAUSED' | 'ARCHIVED';
  createdAt: string;
  updatedAt: string;
}

/** Creates a strategy and returns it, failing the test on a payload error. */
export async function createStrategy(stack: TestStack, apiKey: string, name: string, description?: string | null): Promise<StrategyResult> {
  const { createStrategy: payload } = await data(
    stack,
    apiKey,
    `mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { ${STRATEGY_FIELDS} } ${PAYLOAD_ERROR_FIELDS} } }`,
    { input: description === undefined ? { name } : { name, description } },
  );
  expect(payload.error).toBeNull();
  return payload.strategy;
}

export type StatusMutation = 'pauseStrategy' | 'resumeStrategy' | 'archiveStrategy';

/** Runs pause/resume/archive and returns the payload. */
export async function changeStatus(stack: TestStack, apiKey: string, mutation: StatusMutation, id: string) {
  const result = await data(
    stack,
    apiKey,
    `mutation ($id: ID!) { ${mutation}(id: $id) { strategy { ${STRATEGY_FIELDS} } ${PAYLOAD_ERROR_FIELDS} } }`,
    { id },
  );
  return result[mutation] as { strategy: StrategyResult | null; error: { code: string; field: string | null; message: string } | null };
}
