import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { FILL_FIELDS, ORDER_FIELDS, STACK_ENV, eventually, orderState, recorded, submitOrder, type Client, type RecordFillPayload } from './support.ts';

/**
 * recordFill calls orders once (apply the fill) within one fetch of fills by the gateway, which gives
 * up after the subgraph timeout. The call has a deadline of half that timeout from the start of the
 * request, so a slow or silent orders costs the client a TEMPORARILY_UNAVAILABLE payload, in time,
 * rather than a top-level error blaming fills; a fill left pending is then settled by recovery.
 */

const SUBGRAPH_TIMEOUT_MS = 2_000;
/** What recordFill allows its calls to orders, together. */
const BUDGET_MS = SUBGRAPH_TIMEOUT_MS / 2;
/** Room for everything else a request does (gateway, auth, fills' own queries) on a busy test machine. */
const SLACK_MS = 400;
const MIN_AGE_MS = 1_500;

let stack: TestStack;
let alice: Client;
let database: pg.Client;

type Intercept = (forward: () => Promise<Response>, signal: AbortSignal | undefined) => Promise<Response>;
/** Runs once, in place of the next call that fills makes to orders' applyFill. */
const intercepts: { apply?: Intercept } = {};

beforeAll(async () => {
  stack = await startStack({
    env: { ...STACK_ENV, SUBGRAPH_TIMEOUT_MS: String(SUBGRAPH_TIMEOUT_MS), FILL_SWEEP_INTERVAL_MS: '100', FILL_SWEEP_MIN_AGE_MS: String(MIN_AGE_MS) },
  });
  alice = await stack.createAccountWithKey('Alice');
  database = new pg.Client({ connectionString: stack.databaseUrl });
  await database.connect();

  // Every server of the stack runs in this process, so fills' calls to orders go through this fetch.
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const body = typeof init?.body === 'string' ? init.body : '';
    const kind = body.includes('FillsApplyFill') ? 'apply' : undefined;
    const intercept = kind && intercepts[kind];
    if (kind && intercept) {
      delete intercepts[kind];
      return intercept(() => realFetch(input, init), init?.signal ?? undefined);
    }
    return realFetch(input, init);
  });
});

afterEach(() => {
  delete intercepts.apply;
});

afterAll(async () => {
  vi.restoreAllMocks();
  await database?.end();
  await stack?.close();
});

/** An orders process that accepted the request and never answers: nothing, until the caller gives up. */
function silent(signal: AbortSignal | undefined): Promise<Response> {
  return new Promise((_, reject) => {
    const abort = () => reject(signal?.reason ?? new Error('aborted'));
    if (signal?.aborted) abort();
    else signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Sends recordFill and returns the whole response, top-level errors included, and how long it took. */
async function timedRecordFill(input: Record<string, unknown>) {
  const started = Date.now();
  const result = await stack.graphql(
    alice.apiKey,
    `mutation ($input: RecordFillInput!) {
      recordFill(input: $input) { fill { ${FILL_FIELDS} } orderSubmission { ${ORDER_FIELDS} } error { code field message } }
    }`,
    { input },
  );
  return { body: result.body as { data?: { recordFill: RecordFillPayload }; errors?: unknown[] }, elapsedMs: Date.now() - started };
}

async function storedFills(executionId: string): Promise<{ id: string; status: string }[]> {
  return (await database.query('select id, status from fills.fills where execution_id = $1', [executionId])).rows;
}

describe('recordFill against a slow or silent orders', () => {
  it('a silent apply: TEMPORARILY_UNAVAILABLE when the deadline passes, inside the gateway timeout, then recovery applies the fill once', async () => {
    const order = await submitOrder(stack, alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '2', price: '30' };
    intercepts.apply = async (_forward, signal) => silent(signal);

    const { body, elapsedMs } = await timedRecordFill(input);
    expect(body.errors).toBeUndefined();
    expect(body.data?.recordFill).toMatchObject({ fill: null, orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
    expect(body.data?.recordFill.error?.message).toMatch(/recovery will apply it to the order or refuse it/);
    expect(elapsedMs).toBeGreaterThanOrEqual(BUDGET_MS - 50);
    expect(elapsedMs).toBeLessThan(BUDGET_MS + SLACK_MS);
    expect(elapsedMs).toBeLessThan(SUBGRAPH_TIMEOUT_MS);
    expect(await storedFills(input.executionId)).toEqual([{ id: expect.any(String), status: 'PENDING' }]);

    await eventually(async () => {
      expect(await storedFills(input.executionId)).toEqual([{ id: expect.any(String), status: 'APPLIED' }]);
    });
    const state = await orderState(stack, alice, order.id);
    expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '2', remainingQuantity: '3', averageFillPrice: '30' });
    expect(state?.fills.map((fill) => fill.executionId)).toEqual([input.executionId]);

    // The retry returns the outcome, and applies nothing again.
    const retry = await recorded(stack, alice, input);
    expect(retry.fill.id).toBe((await storedFills(input.executionId))[0]?.id);
    expect(retry.orderSubmission).toMatchObject({ filledQuantity: '2', remainingQuantity: '3' });
  });

  it('an apply that orders commits but answers too late: TEMPORARILY_UNAVAILABLE in time, and the fill counts once', async () => {
    const order = await submitOrder(stack, alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '5', price: '1' };
    let committed!: Promise<Response>;
    intercepts.apply = async (forward, signal) => {
      committed = forward();
      await committed;
      return silent(signal);
    };

    const { body, elapsedMs } = await timedRecordFill(input);
    expect(body.errors).toBeUndefined();
    expect(body.data?.recordFill).toMatchObject({ fill: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
    expect(elapsedMs).toBeLessThan(BUDGET_MS + SLACK_MS);
    await committed;
    expect(await orderState(stack, alice, order.id)).toMatchObject({ status: 'FILLED', filledQuantity: '5' });

    const payload = await recorded(stack, alice, input);
    expect(payload.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '5' });
    expect((await orderState(stack, alice, order.id))?.fills).toHaveLength(1);
  });
});
