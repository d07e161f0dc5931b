import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { answerLost, eventually, interceptApplyFill, submitOrder } from './support/fixtures.ts';

vi.mock('@ots/shared/http-client', { spy: true });

/**
 * fill.recorded is written by orders in the statement that records the fill, with the order's own
 * event: once, whether the request's answer is lost, the recovery path keeps the fill, or retries follow.
 */

const t = useStack({
  redis: 'none',
  env: { ...NO_RATE_LIMIT_ENV, OUTBOX_RELAY_INTERVAL_MS: '50' },
  accounts: ['alice'],
});
let applyFill: Awaited<ReturnType<typeof interceptApplyFill>>;

beforeAll(async () => {
  applyFill = await interceptApplyFill();
});

afterEach(() => {
  applyFill.clear();
});

afterAll(async () => {
  vi.restoreAllMocks();
});

describe('fill.recorded of a fill whose answer was lost', () => {
  it('is written once when orders recorded a fill whose answer was lost and the recovery path kept it, and a retry adds none', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '1.5', price: '12' };
    applyFill.once(answerLost);
    expect((await t.alice.recordFill(input)).error?.code).toBe('TEMPORARILY_UNAVAILABLE');
    await eventually(async () => {
      expect((await t.alice.orderWithFills(order.id))?.fills).toHaveLength(1);
    });
    const retried = await t.alice.recordFill(input);
    expect(retried.error).toBeNull();

    // Orders writes fill.recorded with the order's own event.
    const events = await t.alice.allEvents(['orders']);
    expect(events.map((event) => event.type)).toEqual(['order_submission.submitted', 'order_submission.partially_filled', 'fill.recorded']);
    const { orderSubmission, ...fill } = retried.fill!;
    expect(events[2]!.data).toMatchObject({ ...fill, orderSubmissionId: orderSubmission.id });
    expect(events[2]!.data.orderSubmission).toMatchObject({ id: order.id, status: 'PARTIALLY_FILLED', filledQuantity: '1.5', remainingQuantity: '3.5' });
    expect(events[2]!.data.orderSubmission).toEqual(events[1]!.data);
  });
});
