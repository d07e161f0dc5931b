import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { sql } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { receiveId, type Uuid } from '@ots/shared/ids';
import { createLogger } from '@ots/shared/logger';
import { testScope } from '@ots/shared/testing/scope';
import { DELIVERY_WINDOW_MS, MAX_ENDPOINTS_PER_ACCOUNT, RETENTION_MS, RETRY_DELAYS_MS } from '../src/domain.ts';
import { CLAIM_LEASE_MS, deleteExpiredEvents, dispatchDueMessages, ENDPOINT_CONCURRENCY, startDispatcher, type DispatcherDeps } from '../src/dispatcher.ts';
import { createEndpoint, disableEndpoint, enableEndpoint, removeEndpoint, type EventsScope } from '../src/operations.ts';
import { claimDueMessages, recordDelivered } from '../src/repository.ts';
import { ingest, ManualClock, strategyEvent, secretKey, useEventsDatabase } from './support/fixtures.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';

const { db } = await useEventsDatabase();
let receiver: Receiver;
const log = createLogger('events-test', 'silent');

afterEach(async () => {
  await receiver?.close();
  // The dispatcher claims across accounts: no test may leave due messages for the next one.
  await db.deleteFrom('webhook_endpoints').execute();
});

const SECOND = 1000;
const MINUTE = 60 * SECOND;

async function setUp(clock: ManualClock, random = () => 0.5) {
  receiver = await new Receiver().start();
  const accountId = randomUUID();
  const context: EventsScope = { ...testScope(db, accountId), production: false, secretKey, now: () => clock.now() };
  const created = await createEndpoint(context, { url: receiver.url });
  if (!created.ok) throw new Error(created.error.message);
  receiver.secrets = [created.value.signingSecret];
  const deps: DispatcherDeps = { db, log, production: false, clock, random, deliveryTimeoutMs: 500, secretKey };
  return { accountId, endpoint: created.value.endpoint, deps };
}

async function messageOf(eventId: Uuid) {
  return db.selectFrom('webhook_messages').selectAll().where('event_id', '=', eventId).executeTakeFirstOrThrow();
}

/** Dispatches the event's message on its schedule, one attempt per due time, until it is no longer pending: failed, at its 3 days' end. */
async function retryUntilFailed(deps: DispatcherDeps, clock: ManualClock, eventId: Uuid) {
  for (;;) {
    expect(await dispatchDueMessages(deps)).toBe(1);
    const message = await messageOf(eventId);
    if (message.state !== 'PENDING') return expect(message.state).toBe('FAILED');
    clock.set(message.next_attempt_at);
  }
}

async function attemptsOf(eventId: Uuid) {
  return db.selectFrom('webhook_attempts').selectAll().where('event_id', '=', eventId).orderBy('attempted_at').execute();
}

describe('disabling and enabling an endpoint while an attempt is in flight', () => {
  it('never makes the message due again under its claim: it is sent once at a time, parked when the attempt fails, and sent when enabled', async () => {
    const clock = new ManualClock();
    const { accountId, endpoint, deps } = await setUp(clock);
    const scope: EventsScope = { ...testScope(db, accountId), production: false, secretKey, now: () => clock.now() };
    receiver.answerNext('hang');
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());

    const inFlight = dispatchDueMessages(deps);
    await expect.poll(() => receiver.received.length).toBe(1);
    const claimed = await messageOf(event.id);
    expect(claimed.claim_token).not.toBeNull();
    expect((await disableEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
    expect((await enableEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
    // Still under its claim's lease: not due for a second claimer while the first attempt runs.
    expect((await messageOf(event.id)).next_attempt_at).toEqual(claimed.next_attempt_at);
    expect(await claimDueMessages(db, clock.now(), CLAIM_LEASE_MS, { limit: 10, perEndpoint: 10, perFailingEndpoint: 10, inFlight: new Map() }, randomUUID())).toEqual([]);

    // Disabled again before the attempt ends: its failure leaves the message parked with the endpoint's others.
    expect((await disableEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
    expect(await inFlight).toBe(1);
    const parked = await db
      .selectFrom('webhook_messages')
      .select(['state', 'claim_token', sql<boolean>`next_attempt_at = 'infinity'`.as('parked')])
      .where('event_id', '=', event.id)
      .executeTakeFirstOrThrow();
    expect(parked).toEqual({ state: 'PENDING', claim_token: null, parked: true });

    expect((await enableEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
    expect(await dispatchDueMessages(deps)).toBe(1);
    expect((await messageOf(event.id)).state).toBe('DELIVERED');
    expect(receiver.received).toHaveLength(2);
  });

  it('marks failed, not sends, the messages that waited past their 3 days while it was disabled; the rest are sent', async () => {
    const clock = new ManualClock();
    const { accountId, endpoint, deps } = await setUp(clock);
    const scope: EventsScope = { ...testScope(db, accountId), production: false, secretKey, now: () => clock.now() };
    // Two messages not yet sent, parked when the endpoint is disabled (events while it is disabled make none).
    const stale = strategyEvent(accountId, clock.now());
    await ingest(db, [stale], clock.now());
    clock.advance(DELIVERY_WINDOW_MS - 2 * MINUTE);
    const recent = strategyEvent(accountId, clock.now());
    await ingest(db, [recent], clock.now());
    expect((await disableEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
    clock.advance(3 * MINUTE);

    expect((await enableEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
    expect(await dispatchDueMessages(deps)).toBe(1);
    expect((await messageOf(stale.id)).state).toBe('FAILED');
    expect((await messageOf(recent.id)).state).toBe('DELIVERED');
    expect(receiver.received.map((request) => request.headers['webhook-id'])).toEqual([recent.id]);
  });
});

describe('delivery with retries against a real receiver', () => {
  it('retries a 500 and a time-out on the schedule, with jitter, and delivers on the 200 with the same webhook-id', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock, () => 0.9);
    receiver.answerNext(500, 'hang');
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());

    const endOf = (attempt: { attempted_at: Date; duration_ms: number }) => attempt.attempted_at.getTime() + attempt.duration_ms;
    expect(await dispatchDueMessages(deps)).toBe(1);
    let message = await messageOf(event.id);
    // 5 s after the attempt ended, stretched by the jitter (random 0.9 → +8 %), and not due before.
    expect(message.next_attempt_at.getTime() - endOf((await attemptsOf(event.id))[0]!)).toBe(5_400);
    expect(await dispatchDueMessages(deps)).toBe(0);

    clock.set(message.next_attempt_at);
    expect(await dispatchDueMessages(deps)).toBe(1);
    message = await messageOf(event.id);
    // After the time-out too, counted from its end, half a second after it started.
    expect(message.next_attempt_at.getTime() - endOf((await attemptsOf(event.id))[1]!)).toBe(5 * MINUTE * 1.08);

    clock.set(message.next_attempt_at);
    expect(await dispatchDueMessages(deps)).toBe(1);
    expect((await messageOf(event.id)).state).toBe('DELIVERED');

    expect(receiver.received).toHaveLength(3);
    for (const hook of receiver.received) {
      expect(hook.headers['webhook-id']).toBe(event.id);
      expect(hook.verified).toEqual({ id: event.id, type: event.type, occurredAt: event.occurredAt.toISOString(), data: event.data });
    }
    const attempts = await attemptsOf(event.id);
    expect(attempts.map((row) => [row.attempt, row.status_code, row.failure, row.succeeded])).toEqual([
      [1, 500, null, false],
      [2, null, 'no answer within 0.5 s', false],
      [3, 200, null, true],
    ]);
    expect(attempts[1]!.duration_ms).toBeGreaterThanOrEqual(450);
  });

  it('follows the whole schedule for 3 days, then marks the delivery failed; 5 days of failures disable the endpoint', async () => {
    const clock = new ManualClock();
    const { accountId, endpoint, deps } = await setUp(clock);
    receiver.defaultAnswer = 503;
    const start = clock.now();
    const first = strategyEvent(accountId, start);
    await ingest(db, [first], start);
    await retryUntilFailed(deps, clock, first.id);
    const attempts = await attemptsOf(first.id);
    const times = attempts.map((attempt) => attempt.attempted_at.getTime() - start.getTime());
    // Each wait from the end of the attempt before.
    const gaps = attempts.slice(1).map((attempt, index) => attempt.attempted_at.getTime() - attempts[index]!.attempted_at.getTime() - attempts[index]!.duration_ms);
    const TEN_HOURS = 10 * 60 * MINUTE;
    expect(gaps.slice(0, RETRY_DELAYS_MS.length)).toEqual(RETRY_DELAYS_MS);
    expect(gaps.slice(RETRY_DELAYS_MS.length).every((gap) => gap === TEN_HOURS)).toBe(true);
    expect(times.at(-1)!).toBeLessThanOrEqual(DELIVERY_WINDOW_MS);
    expect(times.at(-1)! + TEN_HOURS).toBeGreaterThan(DELIVERY_WINDOW_MS);
    expect(receiver.received.every((hook) => hook.headers['webhook-id'] === first.id)).toBe(true);

    let row = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'ENABLED', failing_since: start, last_failed_at: attempts.at(-1)!.attempted_at });

    // A later event, within a retry's wait of the last failure, keeps the run going until it reaches 5 days.
    clock.set(new Date(attempts.at(-1)!.attempted_at.getTime() + TEN_HOURS));
    const second = strategyEvent(accountId, clock.now());
    await ingest(db, [second], clock.now());
    for (;;) {
      expect(await dispatchDueMessages(deps)).toBe(1);
      row = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
      if (row.status === 'DISABLED') break;
      const message = await messageOf(second.id);
      expect(message.state).toBe('PENDING');
      clock.set(message.next_attempt_at);
    }
    row = await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('DISABLED');
    expect(row.disabled_reason).toContain('5 days');
    const lastAttempt = (await attemptsOf(second.id)).at(-1)!;
    expect(lastAttempt.attempted_at.getTime() - start.getTime()).toBeGreaterThanOrEqual(5 * 24 * 60 * MINUTE);
    // Disabled: its pending message is parked out of every claim's range, and nothing more is claimed.
    const parked = await db
      .selectFrom('webhook_messages')
      .select(sql<boolean>`next_attempt_at = 'infinity'`.as('parked'))
      .where('event_id', '=', second.id)
      .executeTakeFirstOrThrow();
    expect(parked).toEqual({ parked: true });
    clock.advance(24 * 60 * MINUTE);
    expect(await dispatchDueMessages(deps)).toBe(0);
  });

  it('one failure after a quiet spell starts a new run of failures: it does not disable the endpoint for the run that ended days before', async () => {
    const clock = new ManualClock();
    const { accountId, endpoint, deps } = await setUp(clock);
    const endpointRow = () => db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
    receiver.defaultAnswer = 503;
    const start = clock.now();
    const first = strategyEvent(accountId, start);
    await ingest(db, [first], start);
    await retryUntilFailed(deps, clock, first.id);
    expect(await endpointRow()).toMatchObject({ status: 'ENABLED', failing_since: start });

    // The receiver is fixed; a week without events; the next event's first attempt meets one passing 502.
    receiver.defaultAnswer = 200;
    receiver.answerNext(502);
    clock.advance(7 * 24 * 60 * MINUTE);
    const second = strategyEvent(accountId, clock.now());
    await ingest(db, [second], clock.now());
    const failedAt = clock.now();
    expect(await dispatchDueMessages(deps)).toBe(1);
    expect(await endpointRow()).toMatchObject({ status: 'ENABLED', disabled_reason: null, failing_since: failedAt, last_failed_at: failedAt });

    clock.set((await messageOf(second.id)).next_attempt_at);
    expect(await dispatchDueMessages(deps)).toBe(1);
    expect((await messageOf(second.id)).state).toBe('DELIVERED');
    expect(await endpointRow()).toMatchObject({ status: 'ENABLED', failing_since: null });
  });

  it('does not follow redirects, and records a 2xx at once whatever its body does: endless, or begun and never ended', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    receiver.answerNext(302, 'endless', 'unfinished');
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());
    // An answer read to its end would take the whole 10 s: the attempts end long before.
    const patient = { ...deps, deliveryTimeoutMs: 10 * SECOND };
    await dispatchDueMessages(patient);
    clock.advance(6 * SECOND);
    const started = performance.now();
    await dispatchDueMessages(patient);
    expect(performance.now() - started).toBeLessThan(5 * SECOND);
    const second = strategyEvent(accountId, clock.now());
    await ingest(db, [second], clock.now());
    await dispatchDueMessages(patient);
    expect(performance.now() - started).toBeLessThan(5 * SECOND);
    const attempts = [...(await attemptsOf(event.id)), ...(await attemptsOf(second.id))];
    expect(attempts.map((row) => [row.status_code, row.failure, row.succeeded])).toEqual([
      [302, 'redirect not followed', false],
      [200, null, true],
      [200, null, true],
    ]);
    expect(receiver.received).toHaveLength(3);
  });
});

describe('an endpoint or event deleted while its attempt is in flight', () => {
  it('records nothing and logs no error, failed or delivered, and the dispatcher goes on delivering', async () => {
    const clock = new ManualClock();
    const { accountId, endpoint, deps } = await setUp(clock);
    const scope: EventsScope = { ...testScope(db, accountId), production: false, secretKey, now: () => clock.now() };
    // A receiver that answers 200 only when the test lets it: the delivered attempt ends after its event is gone.
    const held: ServerResponse[] = [];
    const slow = createServer((request, response) => {
      request.resume();
      held.push(response);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const slowPort = (slow.address() as { port: number }).port;
    const quiet = { error: vi.fn(), warn: vi.fn(), info: vi.fn() };
    const dispatcher = startDispatcher({ ...deps, log: quiet, deliveryTimeoutMs: 2 * SECOND }, MINUTE);
    try {
      // The endpoint is removed while the receiver hangs: its attempt fails at the deadline, with nothing left to record it on.
      receiver.answerNext('hang');
      const first = strategyEvent(accountId, clock.now());
      await ingest(db, [first], clock.now());
      dispatcher.wake();
      await expect.poll(() => receiver.received.length).toBe(1);
      expect((await removeEndpoint(scope, receiveId(endpoint.id))).ok).toBe(true);
      await expect.poll(() => quiet.info.mock.calls.length + quiet.error.mock.calls.length).toBe(1);

      // The event expires (the retention clean-up) while the receiver takes its time over a 200.
      const other = await createEndpoint(scope, { url: `http://127.0.0.1:${slowPort}/hooks` });
      if (!other.ok) throw new Error(other.error.message);
      const second = strategyEvent(accountId, clock.now());
      await ingest(db, [second], clock.now());
      dispatcher.wake();
      await expect.poll(() => held.length).toBe(1);
      expect(await deleteExpiredEvents(db, new Date(clock.now().getTime() + RETENTION_MS + 1))).toBeGreaterThan(0);
      held[0]!.end('ok');
      await expect.poll(() => quiet.info.mock.calls.length + quiet.error.mock.calls.length).toBe(2);

      expect(quiet.error).not.toHaveBeenCalled();
      expect(await db.selectFrom('webhook_attempts').select('id').where('account_id', '=', accountId).execute()).toEqual([]);
      // Still delivering: a new event reaches the endpoint that is left.
      const third = strategyEvent(accountId, clock.now());
      await ingest(db, [third], clock.now());
      dispatcher.wake();
      await expect.poll(() => held.length).toBe(2);
      held[1]!.end('ok');
      await expect.poll(async () => (await messageOf(third.id)).state).toBe('DELIVERED');
      expect(quiet.error).not.toHaveBeenCalled();
    } finally {
      await dispatcher.stop();
      slow.closeAllConnections();
      await new Promise<void>((resolve) => slow.close(() => resolve()));
    }
  });
});

describe('claims', () => {
  it('two dispatchers working side by side send each message once', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    const events = Array.from({ length: 60 }, (_, index) => strategyEvent(accountId, clock.now(), `S${index}`));
    await ingest(db, events, clock.now());
    let sent = 0;
    for (;;) {
      const [a, b] = await Promise.all([dispatchDueMessages(deps), dispatchDueMessages(deps)]);
      sent += a + b;
      if (a + b === 0) break;
    }
    expect(sent).toBe(60);
    const ids = receiver.received.map((hook) => hook.headers['webhook-id']);
    expect(ids).toHaveLength(60);
    expect(new Set(ids).size).toBe(60);
  });

  it('a dispatcher that dies after claiming: nobody sends while its claim holds, then another sends it, same webhook-id', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());
    // The claim commits; the claimer dies before sending or recording anything.
    expect(await claimDueMessages(db, clock.now(), CLAIM_LEASE_MS, { limit: 10, perEndpoint: 10, perFailingEndpoint: 10, inFlight: new Map() }, randomUUID())).toHaveLength(1);
    expect(await dispatchDueMessages(deps)).toBe(0);
    clock.advance(CLAIM_LEASE_MS - 1);
    expect(await dispatchDueMessages(deps)).toBe(0);
    clock.advance(1);
    expect(await dispatchDueMessages(deps)).toBe(1);
    expect(receiver.received.map((hook) => hook.headers['webhook-id'])).toEqual([event.id]);
    expect((await messageOf(event.id)).state).toBe('DELIVERED');
  });
});

describe('attempts that end without an answer of the receiver', () => {
  it("an attempt interrupted by the dispatcher's stop is no step of the schedule: the real failure after it is retried 5 s later, not 5 min", async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    receiver.answerNext('hang', 503);
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());
    const dispatcher = startDispatcher({ ...deps, deliveryTimeoutMs: 10 * SECOND }, MINUTE);
    try {
      dispatcher.wake();
      await expect.poll(() => receiver.received.length).toBe(1);
    } finally {
      await dispatcher.stop();
    }
    expect(await messageOf(event.id)).toMatchObject({ state: 'PENDING', attempts: 0, next_attempt_at: clock.now() });

    expect(await dispatchDueMessages(deps)).toBe(1);
    const failed = (await attemptsOf(event.id)).at(-1)!;
    expect(failed).toMatchObject({ attempt: 1, status_code: 503 });
    const message = await messageOf(event.id);
    expect(message.next_attempt_at.getTime() - failed.attempted_at.getTime() - failed.duration_ms).toBe(RETRY_DELAYS_MS[0]);
  });

  it('an attempt whose claimer died is no step of the schedule either: the real failure after it is retried 5 s later, not 5 min', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    receiver.answerNext(503);
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());
    // The claim commits; the claimer dies before recording anything.
    expect(await claimDueMessages(db, clock.now(), CLAIM_LEASE_MS, { limit: 10, perEndpoint: 10, perFailingEndpoint: 10, inFlight: new Map() }, randomUUID())).toHaveLength(1);
    clock.advance(CLAIM_LEASE_MS);

    expect(await dispatchDueMessages(deps)).toBe(1);
    const attempts = await attemptsOf(event.id);
    expect(attempts.map((row) => [row.attempt, row.status_code])).toEqual([[1, 503]]);
    const message = await messageOf(event.id);
    expect(message.attempts).toBe(1);
    expect(message.next_attempt_at.getTime() - attempts[0]!.attempted_at.getTime() - attempts[0]!.duration_ms).toBe(RETRY_DELAYS_MS[0]);
  });

  it('a message whose every attempt kills its claimer is marked failed once past its 3 days, not claimed until its event expires', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    const start = clock.now();
    const event = strategyEvent(accountId, start);
    await ingest(db, [event], start);
    const crash = () => claimDueMessages(db, clock.now(), CLAIM_LEASE_MS, { limit: 10, perEndpoint: 10, perFailingEndpoint: 10, inFlight: new Map() }, randomUUID());
    expect(await crash()).toHaveLength(1);
    // Its claims lapse one after another; the last within the window is still claimed.
    clock.set(new Date(start.getTime() + DELIVERY_WINDOW_MS - CLAIM_LEASE_MS / 2));
    expect(await crash()).toHaveLength(1);
    clock.advance(CLAIM_LEASE_MS);
    expect(await crash()).toEqual([]);
    expect(await messageOf(event.id)).toMatchObject({ state: 'FAILED', claim_token: null, attempts: 1 });
    expect(await dispatchDueMessages(deps)).toBe(0);
    expect(receiver.received).toEqual([]);
  });

  it('a claimer alive but slower than its lease, at the end of the 3 days, records its delivery: the message is delivered, not left failed', async () => {
    const clock = new ManualClock();
    const { accountId } = await setUp(clock);
    const start = clock.now();
    const event = strategyEvent(accountId, start);
    await ingest(db, [event], start);
    const claim = () => claimDueMessages(db, clock.now(), CLAIM_LEASE_MS, { limit: 10, perEndpoint: 10, perFailingEndpoint: 10, inFlight: new Map() }, randomUUID());
    clock.set(new Date(start.getTime() + DELIVERY_WINDOW_MS - CLAIM_LEASE_MS / 2));
    const [slow] = await claim();
    // Its lease lapses past the window while it still waits for the receiver: the next claim takes it for dead.
    clock.advance(CLAIM_LEASE_MS);
    expect(await claim()).toEqual([]);
    expect(await messageOf(event.id)).toMatchObject({ state: 'FAILED', claim_token: null });
    // Then the receiver's 200 comes, and the slow claimer records it.
    expect(await recordDelivered(db, slow!, { attemptedAt: clock.now(), statusCode: 200, failure: null, succeeded: true, durationMs: CLAIM_LEASE_MS })).toBe(true);
    expect(await messageOf(event.id)).toMatchObject({ state: 'DELIVERED', claim_token: null });
  });
});

describe('endpoints proceed independently', () => {
  it("an account's every endpoint at a receiver that never answers, with 80 events each, holds up none of another account's deliveries", async () => {
    const clock = new ManualClock();
    const hanging = await setUp(clock);
    receiver.defaultAnswer = 'hang';
    const hangingScope: EventsScope = { ...testScope(db, hanging.accountId), production: false, secretKey, now: () => clock.now() };
    for (let index = 1; index < MAX_ENDPOINTS_PER_ACCOUNT; index += 1) {
      const another = await createEndpoint(hangingScope, { url: receiver.url });
      if (!another.ok) throw new Error(another.error.message);
    }
    const healthy = await new Receiver().start();
    try {
      const healthyAccount = randomUUID();
      const created = await createEndpoint({ ...testScope(db, healthyAccount), production: false, secretKey, now: () => clock.now() }, { url: healthy.url });
      if (!created.ok) throw new Error(created.error.message);
      healthy.secrets = [created.value.signingSecret];
      // The hanging receiver's events are older: a dispatcher that works oldest first, a batch at a time, meets them first.
      await ingest(db, Array.from({ length: 80 }, (_, index) => strategyEvent(hanging.accountId, clock.now(), `H${index}`)), clock.now());
      clock.advance(1);
      const healthyEvents = Array.from({ length: 5 }, (_, index) => strategyEvent(healthyAccount, clock.now(), `OK${index}`));
      await ingest(db, healthyEvents, clock.now());

      const dispatcher = startDispatcher({ ...hanging.deps, deliveryTimeoutMs: 10 * SECOND }, MINUTE);
      try {
        await healthy.waitFor(healthyEvents.length, 25 * SECOND);
        // Every healthy delivery arrived while the hanging receiver's first attempts still waited for their deadline.
        const hangingAttemptsEnded = await db.selectFrom('webhook_attempts').select('id').where('account_id', '=', hanging.accountId).execute();
        expect(hangingAttemptsEnded).toEqual([]);
        expect(new Set(healthy.received.map((hook) => hook.headers['webhook-id']))).toEqual(new Set(healthyEvents.map((event) => event.id)));
        const deliveredCount = async () =>
          (await db.selectFrom('webhook_messages').select('id').where('endpoint_id', '=', created.value.endpoint.id).where('state', '=', 'DELIVERED').execute()).length;
        await expect.poll(deliveredCount).toBe(healthyEvents.length);
        // The hanging receiver holds a bounded number of attempts per endpoint, not the dispatcher.
        expect(receiver.received.length).toBeLessThanOrEqual(MAX_ENDPOINTS_PER_ACCOUNT * ENDPOINT_CONCURRENCY);
      } finally {
        await dispatcher.stop();
      }
      // Stopping interrupted the hanging attempts: due again, not failed.
      const hangingStates = await db.selectFrom('webhook_messages').select('state').where('account_id', '=', hanging.accountId).execute();
      expect(hangingStates.every((row) => row.state === 'PENDING')).toBe(true);
    } finally {
      await healthy.close();
    }
  });
  it('two accounts of 16 endpoints each at receivers that never answer, with a backlog each, hold up no other endpoint\'s delivery', async () => {
    const clock = new ManualClock();
    const first = await setUp(clock);
    receiver.defaultAnswer = 'hang';
    const second = randomUUID();
    for (const [accountId, endpoints] of [[first.accountId, MAX_ENDPOINTS_PER_ACCOUNT - 1], [second, MAX_ENDPOINTS_PER_ACCOUNT]] as const) {
      const scope: EventsScope = { ...testScope(db, accountId), production: false, secretKey, now: () => clock.now() };
      for (let index = 0; index < endpoints; index += 1) {
        const created = await createEndpoint(scope, { url: receiver.url });
        if (!created.ok) throw new Error(created.error.message);
      }
      // 20 events, each to all 16 endpoints: more than a process's room for attempts, all older than the healthy one's.
      await ingest(db, Array.from({ length: 20 }, (_, index) => strategyEvent(accountId, clock.now(), `H${index}`)), clock.now());
    }
    const healthy = await new Receiver().start();
    try {
      const healthyAccount = randomUUID();
      const created = await createEndpoint({ ...testScope(db, healthyAccount), production: false, secretKey, now: () => clock.now() }, { url: healthy.url });
      if (!created.ok) throw new Error(created.error.message);
      healthy.secrets = [created.value.signingSecret];
      clock.advance(1);
      const event = strategyEvent(healthyAccount, clock.now());
      await ingest(db, [event], clock.now());

      const dispatcher = startDispatcher({ ...first.deps, deliveryTimeoutMs: 10 * SECOND }, MINUTE);
      try {
        // Within a couple of seconds, while every hanging attempt still waits for its 10 s deadline.
        await healthy.waitFor(1, 2 * SECOND);
        expect(healthy.received.map((hook) => hook.headers['webhook-id'])).toEqual([event.id]);
      } finally {
        await dispatcher.stop();
      }
    } finally {
      await healthy.close();
    }
  });
});

describe('ingest', () => {
  it('keeps one copy of an event sent twice (a relay that crashed before deleting its rows) and fans it out once', async () => {
    const clock = new ManualClock();
    const { accountId, deps } = await setUp(clock);
    const event = strategyEvent(accountId, clock.now());
    expect(await ingest(db, [event], clock.now())).toBe(1);
    expect(await ingest(db, [event, strategyEvent(accountId, clock.now())], clock.now())).toBe(1);
    await dispatchDueMessages(deps);
    expect(receiver.received.filter((hook) => hook.headers['webhook-id'] === event.id)).toHaveLength(1);
    const stored = await db.selectFrom('events').select('id').where('account_id', '=', accountId).execute();
    expect(stored).toHaveLength(2);
  });
});
