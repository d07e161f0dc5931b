import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { waitForEvents } from '../../../testing/events.ts';
import { STACK_ENV, eventually, orderState, recordFill, submitOrder, type Client } from './support.ts';

/**
 * fill.recorded is written in the transaction that marks a fill APPLIED, whichever settles it: here
 * the recovery sweeper, after orders applied the fill but its answer was lost. Once, however many
 * settlements and retries follow.
 */

const MIN_AGE_MS = 1_000;

let stack: TestStack;
let alice: Client;
let interceptApplyFill: ((forward: () => Promise<Response>) => Promise<Response>) | undefined;

beforeAll(async () => {
  stack = await startStack({
    redis: 'none',
    env: { ...STACK_ENV, FILL_SWEEP_INTERVAL_MS: '100', FILL_SWEEP_MIN_AGE_MS: String(MIN_AGE_MS), OUTBOX_RELAY_INTERVAL_MS: '50' },
  });
  alice = await stack.createAccountWithKey('Alice');
  // Every server of the stack runs in this process, so fills' call to orders goes through this fetch.
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const intercept = interceptApplyFill;
    if (intercept && typeof init?.body === 'string' && init.body.includes('applyFill(input')) {
      interceptApplyFill = undefined;
      return intercept(() => realFetch(input, init));
    }
    return realFetch(input, init);
  });
});

afterEach(() => {
  interceptApplyFill = undefined;
});

afterAll(async () => {
  vi.restoreAllMocks();
  await stack?.close();
});

describe('fill.recorded from the recovery sweeper', () => {
  it('is written once when the sweeper settles a fill whose answer from orders was lost, and a retry adds none', async () => {
    const order = await submitOrder(stack, alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '1.5', price: '12' };
    interceptApplyFill = async (forward) => {
      await forward();
      throw new TypeError('fetch failed');
    };
    expect((await recordFill(stack, alice, input)).error?.code).toBe('TEMPORARILY_UNAVAILABLE');
    await eventually(async () => {
      expect((await orderState(stack, alice, order.id))?.fills).toHaveLength(1);
    });
    const retried = await recordFill(stack, alice, input);
    expect(retried.error).toBeNull();

    await waitForEvents(stack, alice, 3);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const events = await waitForEvents(stack, alice, 3);
    expect(events.map((event) => event.type)).toEqual(['order_submission.submitted', 'order_submission.partially_filled', 'fill.recorded']);
    const { orderSubmission, ...fill } = retried.fill!;
    expect(events[2]!.data).toMatchObject({ ...fill, orderSubmissionId: orderSubmission.id });
    expect(events[2]!.data.orderSubmission).toMatchObject({ id: order.id, status: 'PARTIALLY_FILLED', filledQuantity: '1.5', remainingQuantity: '3.5' });
    expect(events[2]!.data.orderSubmission).toEqual(events[1]!.data);
  });
});
