import { expect, vi } from 'vitest';
import { HttpCallError, postJson, type HttpAnswer, type JsonPost } from '@ots/shared/http-client';
import type { ApiClient, RecordFillInput, SubmitOrderInput } from '../../../../testing/client.ts';

/** The fills end-to-end tests' defaults: orders of 10 ACME, fills that must be recorded. */

export async function submitOrder(client: ApiClient, input: Partial<SubmitOrderInput> = {}) {
  return client.submittedOrder({ symbol: 'ACME', quantity: '10', ...input });
}

/** Records and returns the fill and its order, failing the test on a payload error. */
export async function recorded(client: ApiClient, input: RecordFillInput) {
  const payload = await client.recordFill(input);
  expect(payload.error).toBeNull();
  return { ...payload, fill: payload.fill!, orderSubmission: payload.orderSubmission! };
}

export async function createStrategy(client: ApiClient, name: string): Promise<string> {
  return (await client.createdStrategy(name)).id;
}

/** Polls until `check` passes or the time is up; convergence is asynchronous by design. */
export async function eventually(check: () => Promise<void>, timeoutMs = 20_000): Promise<void> {
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

/** Runs in place of one call of fills to orders' applyFill; `forward` makes the real call. */
export type ApplyFillIntercept = (forward: () => Promise<HttpAnswer>, post: JsonPost) => Promise<HttpAnswer>;

/** For `once`: orders records the fill, and its answer is lost on the way back (the connection closes). */
export const answerLost: ApplyFillIntercept = async (forward) => {
  await forward();
  throw new HttpCallError('other side closed', false);
};

/**
 * Intercepts fills' calls to orders' applyFill. Every server of the stack runs in the test's process,
 * and the calls go through `postJson` of @ots/shared/http-client, which the test file turns into a
 * spy with `vi.mock('@ots/shared/http-client', { spy: true })` (vitest hoists it above the imports).
 * `once(intercept)` replaces the next applyFill call; every other call goes through untouched.
 */
export async function interceptApplyFill() {
  const actual = await vi.importActual<typeof import('@ots/shared/http-client')>('@ots/shared/http-client');
  let next: ApplyFillIntercept | undefined;
  vi.mocked(postJson).mockImplementation(async (post) => {
    const intercept = next;
    if (!intercept || !post.body.includes('FillsApplyFill')) return actual.postJson(post);
    next = undefined;
    return intercept(() => actual.postJson(post), post);
  });
  return {
    once: (intercept: ApplyFillIntercept) => void (next = intercept),
    clear: () => void (next = undefined),
    /** The real call, to another address (a server that never answers, say). */
    post: actual.postJson,
  };
}
