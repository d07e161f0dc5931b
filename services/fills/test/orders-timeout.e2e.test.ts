import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { print } from 'graphql';
import type { HttpAnswer, JsonPost } from '@ots/shared/http-client';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { RecordFillDocument, type RecordFillInput, type RecordFillMutation } from '../../../testing/generated/operations.ts';
import { interceptApplyFill, recorded, submitOrder } from './support/fixtures.ts';

vi.mock('@ots/shared/http-client', { spy: true });

/**
 * recordFill calls orders once (decide and record the fill) within one fetch of fills by the gateway,
 * which gives up after the subgraph timeout. The call may take half that timeout, so a slow or silent
 * orders costs the client a TEMPORARILY_UNAVAILABLE payload, in time, rather than a top-level error
 * blaming fills; a retry then returns the outcome, the fill applied at most once.
 */

const SUBGRAPH_TIMEOUT_MS = 2_000;
/** What recordFill allows its call to orders. */
const BUDGET_MS = SUBGRAPH_TIMEOUT_MS / 2;
/** Room for what a request does after fills gives up on orders (its payload, the gateway, the client) on a busy test machine. */
const SLACK_MS = 400;

const t = useStack({
  env: { ...NO_RATE_LIMIT_ENV, SUBGRAPH_TIMEOUT_MS: String(SUBGRAPH_TIMEOUT_MS), OUTBOX_RELAY_INTERVAL_MS: '50' },
  accounts: ['alice'],
});
let database: pg.Client;

let applyFill: Awaited<ReturnType<typeof interceptApplyFill>>;
/** An orders process that accepted the request and never answers: a server that reads requests and says nothing. */
let silentServer: Server;
let silentUrl: string;

beforeAll(async () => {
  database = new pg.Client({ connectionString: t.stack.databaseUrl });
  await database.connect();
  applyFill = await interceptApplyFill();
  silentServer = createServer(() => undefined);
  await new Promise<void>((resolve) => silentServer.listen(0, '127.0.0.1', resolve));
  silentUrl = `http://127.0.0.1:${(silentServer.address() as { port: number }).port}/graphql`;
});

afterEach(() => {
  applyFill.clear();
});

afterAll(async () => {
  vi.restoreAllMocks();
  silentServer?.closeAllConnections();
  await new Promise((resolve) => silentServer?.close(resolve));
  await database?.end();
});

/** The call as fills made it, sent where nothing answers, with what is left of its time: it fails when that passes. */
function silent(post: JsonPost, startedAt: number): Promise<HttpAnswer> {
  return applyFill.post({ ...post, url: silentUrl, timeoutMs: post.timeoutMs - (Date.now() - startedAt) });
}

/**
 * Sends recordFill and returns the whole response, top-level errors included, how long it took, and
 * when it was answered. Every server runs in this process, so the longest the event loop could not run
 * while it was under way (another process holding the CPU, a collection) is time no deadline of
 * theirs can help: `stalledMs` says how long that was.
 */
async function timedRecordFill(input: RecordFillInput) {
  const stalls = monitorEventLoopDelay({ resolution: 10 });
  stalls.enable();
  const started = Date.now();
  const result = await t.alice.graphql(print(RecordFillDocument), { input });
  const answeredAt = Date.now();
  stalls.disable();
  return { body: result.body as { data?: RecordFillMutation; errors?: unknown[] }, elapsedMs: answeredAt - started, answeredAt, stalledMs: stalls.max / 1e6 };
}

async function storedFills(executionId: string): Promise<{ id: string; status: string }[]> {
  return (await database.query('select id, status from fills.fills where execution_id = $1', [executionId])).rows;
}

describe('recordFill against a slow or silent orders', () => {
  it('a silent orders: TEMPORARILY_UNAVAILABLE when its time is up, inside the gateway timeout, then a retry applies the fill once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '2', price: '30' };
    let callStartedAt!: number;
    applyFill.once(async (_forward, post) => {
      callStartedAt = Date.now();
      return silent(post, callStartedAt);
    });

    const { body, elapsedMs, answeredAt, stalledMs } = await timedRecordFill(input);
    expect(body.errors).toBeUndefined();
    expect(body.data?.recordFill).toMatchObject({ fill: null, orderSubmission: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
    expect(body.data?.recordFill.error?.message).toMatch(/A retry with the same executionId is safe/);
    expect(elapsedMs).toBeGreaterThanOrEqual(BUDGET_MS - 50);
    // The budget runs from fills' call to orders: what came before it (the gateway, the key check) is not fills' to bound.
    expect(answeredAt - callStartedAt).toBeLessThan(BUDGET_MS + SLACK_MS + stalledMs);
    expect(elapsedMs).toBeLessThan(SUBGRAPH_TIMEOUT_MS);
    // Orders never received it: nothing is recorded.
    expect(await storedFills(input.executionId)).toEqual([]);
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'SUBMITTED', filledQuantity: '0' });

    // The retry records it; another applies nothing again.
    const retry = await recorded(t.alice, input);
    expect(retry.fill.id).toBe((await storedFills(input.executionId))[0]?.id);
    expect(retry.orderSubmission).toMatchObject({ filledQuantity: '2', remainingQuantity: '3' });
    const state = await t.alice.orderWithFills(order.id);
    expect(state).toMatchObject({ status: 'PARTIALLY_FILLED', filledQuantity: '2', remainingQuantity: '3', averageFillPrice: '30' });
    expect(state?.fills.map((fill) => fill.executionId)).toEqual([input.executionId]);
    expect((await recorded(t.alice, input)).fill.id).toBe(retry.fill.id);
    expect((await t.alice.orderWithFills(order.id))?.filledQuantity).toBe('2');
  });

  it('an apply that orders commits but answers too late: TEMPORARILY_UNAVAILABLE in time, and the fill counts once', async () => {
    const order = await submitOrder(t.alice, { quantity: '5' });
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomUUID()}`, quantity: '5', price: '1' };
    let committed!: Promise<HttpAnswer>;
    let callStartedAt!: number;
    applyFill.once(async (forward, post) => {
      callStartedAt = Date.now();
      committed = forward();
      await committed;
      return silent(post, callStartedAt);
    });

    const { body, elapsedMs, answeredAt, stalledMs } = await timedRecordFill(input);
    expect(body.errors).toBeUndefined();
    expect(body.data?.recordFill).toMatchObject({ fill: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
    expect(answeredAt - callStartedAt).toBeLessThan(BUDGET_MS + SLACK_MS + stalledMs);
    expect(elapsedMs).toBeLessThan(SUBGRAPH_TIMEOUT_MS);
    await committed;
    expect(await t.alice.orderWithFills(order.id)).toMatchObject({ status: 'FILLED', filledQuantity: '5' });

    const payload = await recorded(t.alice, input);
    expect(payload.orderSubmission).toMatchObject({ status: 'FILLED', filledQuantity: '5' });
    expect((await t.alice.orderWithFills(order.id))?.fills).toHaveLength(1);
  });
});
