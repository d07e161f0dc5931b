import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient as createSseClient } from 'graphql-sse';
import { revokeKey, updateKey } from '@ots/accounts';
import { signAssertion } from '@ots/shared/assertion';
import { API_KEY_SCOPES } from '@ots/shared/scopes';
import { startReplicatedStack, type Part, type ReplicatedStack } from '../../testing/replicated-stack.ts';
import { EVENTS_SUBSCRIPTION, streamUrls, type StreamedEvent } from '../../testing/streams.ts';
import { Receiver } from '../../testing/webhook-receiver.ts';

/**
 * Contract section 11: the guarantees hold with two replicas of the gateway and of every subgraph
 * behind round-robin balancing, each replica a process of its own, and the SIGKILL of one replica
 * of each under load loses no acknowledged write. Here: revocation and scope changes within 1 s on
 * every gateway, the shared rate limit, idempotent writes (natural ids and `Idempotency-Key`), each
 * outbox event relayed once, the exact sync, webhook deliveries claimed once, fill recovery through
 * orders' relays, and streams delivering events written through the other gateways.
 */
// A burst no other test's key spends, and a refill slow enough that one bucket per gateway (twice
// the burst) and one shared bucket are far apart.
const BURST = 400;
const PER_SECOND = 4;
let stack: ReplicatedStack;
let apiKey: string;

beforeAll(async () => {
  stack = await startReplicatedStack({
    env: { RATE_LIMIT_BURST: String(BURST), RATE_LIMIT_PER_SECOND: String(PER_SECOND) },
  });
  ({ apiKey } = await stack.createAccountWithKey());
}, 300_000);

afterAll(async () => {
  await stack?.close();
}, 60_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function graphql(key: string, query: string, variables: Record<string, unknown> = {}, url = stack.gatewayUrl, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON, read field by field by the assertions
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // A balancer's 502 has no JSON body; the status says enough.
  }
  return { status: response.status, headers: response.headers, body };
}

const SUBMIT = 'mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id clientOrderId } error { code } } }';
const READ = 'query ($id: ID!) { orderSubmission(id: $id) { id clientOrderId } }';
const EVENTS = `query ($after: String) { listEvents(filter: { types: ["order_submission.submitted"] }, first: 100, after: $after) {
  nodes { id data } pageInfo { hasNextPage endCursor } } }`;

const orderInput = (clientOrderId: string) => ({ clientOrderId, symbol: 'REPL', side: 'BUY', type: 'LIMIT', quantity: '1', limitPrice: '10' });

/** The order ids of every order_submission.submitted event of the key's account (an event's data is the order), duplicates kept. */
async function submittedEventOrderIds(key: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const { body } = await graphql(key, EVENTS, { after });
    const page = body.data.listEvents;
    for (const node of page.nodes) ids.push(node.data.id);
    if (!page.pageInfo.hasNextPage) return ids;
    after = page.pageInfo.endCursor;
  }
}

describe('two replicas of everything behind round-robin', () => {
  it('refuses a revoked key on every gateway replica within 1 s', async () => {
    const { apiKeyId, apiKey: revoked } = await stack.createAccountWithKey('Revoked');
    for (const url of stack.gatewayReplicaUrls) expect((await graphql(revoked, '{ viewer { account { id } } }', {}, url)).status).toBe(200);
    const revokedAt = Date.now();
    await revokeKey(stack.operator, { keyId: apiKeyId });
    await sleep(Math.max(0, revokedAt + 1_000 - Date.now()));
    const statuses = await Promise.all(stack.gatewayReplicaUrls.map(async (url) => (await graphql(revoked, '{ viewer { account { id } } }', {}, url)).status));
    expect(statuses).toEqual(stack.gatewayReplicaUrls.map(() => 401));
  });

  it('shares one rate-limit bucket per key across the gateway replicas', async () => {
    const { apiKey: limited } = await stack.createAccountWithKey('Limited');
    const startedAt = Date.now();
    let accepted = 0;
    for (let i = 0; ; i += 1) {
      const url = stack.gatewayReplicaUrls[i % stack.gatewayReplicaUrls.length]!;
      const { status } = await graphql(limited, '{ viewer { apiKey { id } } }', {}, url);
      if (status === 429) break;
      expect(status).toBe(200);
      accepted += 1;
    }
    // The burst plus what refilled meanwhile; a bucket per replica would have let through twice the burst.
    expect(accepted).toBeGreaterThanOrEqual(BURST);
    expect(accepted).toBeLessThanOrEqual(BURST + Math.ceil(((Date.now() - startedAt) / 1000) * PER_SECOND));
  });

  it('makes one order of a clientOrderId submitted through every replica at once', async () => {
    const clientOrderId = `same-${randomBytes(4).toString('hex')}`;
    const answers = await Promise.all(Array.from({ length: 8 }, () => graphql(apiKey, SUBMIT, { input: orderInput(clientOrderId) })));
    const ids = answers.map((answer) => answer.body.data.submitOrder.orderSubmission?.id ?? answer.body.data.submitOrder.error.code);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/./);
    expect((await graphql(apiKey, READ, { id: ids[0] })).body.data.orderSubmission.clientOrderId).toBe(clientOrderId);
  });

  it('relays each outbox event once into the feed, whichever replicas wrote and relayed it', async () => {
    const { apiKey: own } = await stack.createAccountWithKey('Feed');
    const written = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => (await graphql(own, SUBMIT, { input: orderInput(`feed-${i}`) })).body.data.submitOrder.orderSubmission.id as string),
    );
    await expect.poll(() => submittedEventOrderIds(own).then((ids) => ids.sort()), { interval: 250 }).toEqual([...written].sort());
  });

  it('keeps the incremental sync exact while writes land through every replica', async () => {
    const { apiKey: own } = await stack.createAccountWithKey('Sync');
    const SYNC = `query ($after: String) { listOrderSubmissions(orderBy: UPDATED_AT_ASC, first: 100, after: $after) {
      nodes { id status } pageInfo { hasNextPage endCursor } } }`;
    const seen = new Map<string, string>();
    let cursor: string | undefined;
    const syncOnce = async () => {
      for (;;) {
        const page = (await graphql(own, SYNC, { after: cursor })).body.data.listOrderSubmissions;
        for (const node of page.nodes) seen.set(node.id, node.status);
        cursor = page.pageInfo.endCursor;
        if (!page.pageInfo.hasNextPage) return;
      }
    };
    let writing = true;
    const syncing = (async () => {
      while (writing) await syncOnce();
    })();
    const final = new Map<string, string>();
    await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        for (let i = 0; i < 6; i += 1) {
          const id = (await graphql(own, SUBMIT, { input: orderInput(`sync-${worker}-${i}`) })).body.data.submitOrder.orderSubmission.id as string;
          final.set(id, 'SUBMITTED');
          if (i % 2 === 0) {
            const cancel = 'mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { status } } }';
            final.set(id, (await graphql(own, cancel, { id })).body.data.cancelOrderSubmission.orderSubmission.status);
          }
        }
      }),
    );
    writing = false;
    await syncing;
    // A later pass from the kept cursor brings the client to the final state of every order.
    await expect.poll(async () => (await syncOnce(), Object.fromEntries(seen)), { interval: 250 }).toEqual(Object.fromEntries(final));
  });

  it('delivers each event to a webhook once, though both events replicas claim deliveries', async () => {
    const { apiKey: own } = await stack.createAccountWithKey('Hooks');
    const receiver = await new Receiver().start();
    try {
      const created = await graphql(own, 'mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { webhookEndpoint { id } error { code } } }', {
        input: { url: receiver.url, eventTypes: ['order_submission.submitted'] },
      });
      expect(created.body.data.createWebhookEndpoint.error).toBeNull();
      const written = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => (await graphql(own, SUBMIT, { input: orderInput(`hook-${i}`) })).body.data.submitOrder.orderSubmission.id as string),
      );
      await receiver.waitFor(written.length, 30_000);
      // Long enough for a second claim of any delivery to arrive, were there one.
      await sleep(2_000);
      const delivered = receiver.received.map((hook) => JSON.parse(hook.body).data.id as string);
      expect(delivered.sort()).toEqual([...written].sort());
    } finally {
      await receiver.close();
    }
  });

  it('loses no acknowledged write when one replica of each service is killed with SIGKILL under load', async () => {
    const { apiKey: own } = await stack.createAccountWithKey('Crash');
    const acknowledged: string[] = [];
    let failed = 0;
    let writing = true;
    const writer = async (worker: number) => {
      for (let i = 0; writing; i += 1) {
        const answer = await graphql(own, SUBMIT, { input: orderInput(`crash-${worker}-${i}`) }).catch(() => undefined);
        const id = answer?.status === 200 ? answer.body?.data?.submitOrder?.orderSubmission?.id : undefined;
        if (id) acknowledged.push(id);
        else failed += 1;
      }
    };
    const writers = Array.from({ length: 4 }, (_, worker) => writer(worker));
    while (acknowledged.length < 20) await sleep(50);
    const parts: Part[] = ['gateway', 'accounts', 'orders', 'strategies', 'fills', 'events'];
    for (const part of parts) stack.kill(part, 0);
    const atKill = acknowledged.length;
    while (acknowledged.length < atKill + 40) await sleep(50);
    writing = false;
    await Promise.all(writers);

    // Every acknowledged order is there, read through the surviving replicas, and its event is in
    // the feed (the survivors' relays take over what the killed ones had not sent). A write the
    // killed replica committed but never answered may be there too, but every event only once.
    for (const id of acknowledged) expect((await graphql(own, READ, { id })).body.data.orderSubmission?.id).toBe(id);
    await expect.poll(() => submittedEventOrderIds(own), { timeout: 30_000, interval: 500 }).toEqual(expect.arrayContaining(acknowledged));
    const feed = await submittedEventOrderIds(own);
    expect(feed.length).toBe(new Set(feed).size);
    // Writes went on after the kill, through the survivors; the ones the killed replicas held are
    // the only ones allowed to fail, and the client was told.
    expect(acknowledged.length).toBeGreaterThan(atKill);
    expect(failed).toBeLessThan(acknowledged.length);

    // Back to two of each, as an orchestrator would restart them.
    for (const part of parts) await stack.restart(part, 0);
  }, 180_000);
});

describe('fill recovery with two replicas of orders and fills', () => {
  const RECORD = 'mutation ($input: RecordFillInput!) { recordFill(input: $input) { fill { id } orderSubmission { filledQuantity } error { code } } }';
  const FILLED = 'query ($id: ID!) { orderSubmission(id: $id) { status filledQuantity fills { id executionId } } }';
  const APPLY = 'mutation ($input: ApplyFillInput!) { applyFill(input: $input) { outcome fill { id } orderSubmission { filledQuantity } } }';

  it("keeps a fill orders recorded while every fills replica was down once fills is back, brought by orders' relays, applied once", async () => {
    const { accountId, apiKeyId, apiKey: own } = await stack.createAccountWithKey('Fills');
    const order = (await graphql(own, SUBMIT, { input: orderInput('fill-recovery') })).body.data.submitOrder.orderSubmission;
    const input = { orderSubmissionId: order.id, executionId: `exec-${randomBytes(4).toString('hex')}`, quantity: '1', price: '10' };
    const fillsReplicas = Array.from({ length: stack.replicaCount }, (_, index) => index);

    for (const index of fillsReplicas) stack.kill('fills', index);
    let fillId: string;
    try {
      // What a fills replica leaves behind when it dies right after orders answered its applyFill
      // (sent as fills sends it, through orders' balancer): the order counts the fill, fills has nothing.
      const assertion = signAssertion(stack.config.assertionPrivateKey!, { accountId, apiKeyId, scopes: API_KEY_SCOPES }, 60);
      const response = await fetch(stack.subgraphUrls.orders, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-assertion': assertion },
        body: JSON.stringify({ query: APPLY, variables: { input: { ...input, fee: '0', liquidity: 'UNKNOWN' } } }),
      });
      const applied = ((await response.json()) as { data: { applyFill: { outcome: string; fill: { id: string }; orderSubmission: { filledQuantity: string } } } }).data.applyFill;
      expect(applied).toMatchObject({ outcome: 'APPLIED', orderSubmission: { filledQuantity: '1' } });
      fillId = applied.fill.id;
      // Both orders replicas' relays find fills unreachable meanwhile; the event waits in orders' outbox.
      await sleep(500);
    } finally {
      await Promise.all(fillsReplicas.map((index) => stack.restart('fills', index)));
    }

    await expect
      .poll(async () => (await graphql(own, FILLED, { id: order.id })).body.data?.orderSubmission, { timeout: 30_000, interval: 250 })
      .toEqual({ status: 'FILLED', filledQuantity: '1', fills: [{ id: fillId, executionId: input.executionId }] });
    expect((await graphql(own, 'query ($id: ID!) { fill(id: $id) { id executionId } }', { id: fillId })).body.data.fill).toEqual({ id: fillId, executionId: input.executionId });
    // The venue's retries, through every replica at once, find the recorded fill; nothing is counted twice.
    const retries = await Promise.all(Array.from({ length: 6 }, async () => (await graphql(own, RECORD, { input })).body.data.recordFill));
    for (const retried of retries) expect(retried).toEqual({ fill: { id: fillId }, orderSubmission: { filledQuantity: '1' }, error: null });
    expect((await graphql(own, FILLED, { id: order.id })).body.data.orderSubmission.fills).toEqual([{ id: fillId, executionId: input.executionId }]);
    expect((await graphql(own, '{ listFills(first: 10) { nodes { id } } }')).body.data.listFills.nodes).toEqual([{ id: fillId }]);
  }, 180_000);
});

describe('scope changes with two gateway replicas', () => {
  const CREATE_STRATEGY = 'mutation ($name: String!) { createStrategy(input: { name: $name }) { strategy { id } error { code } } }';

  it('refuses a mutation needing a removed scope with FORBIDDEN on every gateway replica within 1 s', async () => {
    const { apiKeyId, apiKey: scoped } = await stack.createAccountWithKey('Scoped');
    for (const [index, url] of stack.gatewayReplicaUrls.entries()) {
      expect((await graphql(scoped, CREATE_STRATEGY, { name: `before-${index}` }, url)).body.data.createStrategy.error).toBeNull();
    }
    const changedAt = Date.now();
    await updateKey(stack.operator, { keyId: apiKeyId, scopes: ['read', 'orders:write'] });
    await sleep(Math.max(0, changedAt + 1_000 - Date.now()));
    const answers = await Promise.all(stack.gatewayReplicaUrls.map((url, index) => graphql(scoped, CREATE_STRATEGY, { name: `after-${index}` }, url)));
    expect(answers.map((answer) => answer.body.errors?.[0]?.extensions?.code)).toEqual(stack.gatewayReplicaUrls.map(() => 'FORBIDDEN'));
    // Refused before anything ran, and what the key kept still works on every replica.
    const names = (await graphql(scoped, '{ listStrategies(first: 100) { nodes { name } } }')).body.data.listStrategies.nodes.map((node: { name: string }) => node.name);
    expect(names.sort()).toEqual(stack.gatewayReplicaUrls.map((_, index) => `before-${index}`));
    for (const [index, url] of stack.gatewayReplicaUrls.entries()) {
      expect((await graphql(scoped, SUBMIT, { input: orderInput(`scoped-${index}`) }, url)).body.data.submitOrder.error).toBeNull();
    }
  });
});

describe('Idempotency-Key with two gateway replicas', () => {
  it('runs a key sent through the round-robin gateways at once once: one order, every other answer its replay or "in progress"', async () => {
    const { apiKey: own } = await stack.createAccountWithKey('Idempotent');
    const key = `replicated-${randomBytes(6).toString('hex')}`;
    // No clientOrderId: the key alone makes the repeats one order.
    const input = { symbol: 'IDEM', side: 'BUY', type: 'LIMIT', quantity: '1', limitPrice: '10' };
    const send = (url = stack.gatewayUrl) => graphql(own, SUBMIT, { input }, url, { 'idempotency-key': key });

    const answers = await Promise.all(Array.from({ length: 8 }, () => send()));
    const ran = answers.filter((answer) => answer.status === 200 && answer.headers.get('idempotent-replayed') === null);
    expect(ran).toHaveLength(1);
    const first = ran[0]!.body;
    expect(first.data.submitOrder.error).toBeNull();
    for (const answer of answers) {
      if (answer.status === 409) expect(answer.body).toEqual({ detail: 'A request with this Idempotency-Key is in progress' });
      else expect(answer.body).toEqual(first);
    }
    // Once it has run, every replica replays it.
    for (const url of stack.gatewayReplicaUrls) {
      const replay = await send(url);
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(first);
    }
    const orders = (await graphql(own, '{ listOrderSubmissions(first: 100) { nodes { id } } }')).body.data.listOrderSubmissions.nodes;
    expect(orders).toEqual([{ id: first.data.submitOrder.orderSubmission.id }]);
  });
});

describe('streams with two gateway replicas', () => {
  const CREATE_STRATEGY = 'mutation ($name: String!) { createStrategy(input: { name: $name }) { strategy { id } error { code } } }';

  it('delivers to an SSE stream on one gateway replica the events written through the others, each once, in order', async () => {
    const { apiKey: own } = await stack.createAccountWithKey('Streams');
    const [streamUrl, ...otherUrls] = stack.gatewayReplicaUrls;
    // A first event, so that the stream starts from a cursor and misses nothing written after it.
    expect((await graphql(own, CREATE_STRATEGY, { name: 'start' }, streamUrl)).body.data.createStrategy.error).toBeNull();
    // The feed's end is never null, so its cursor says nothing of whether the first event is in: its page does.
    const page = async () => (await graphql(own, '{ listEvents(first: 10) { nodes { id } pageInfo { endCursor } } }')).body.data.listEvents;
    await expect.poll(async () => (await page()).nodes.length, { interval: 100 }).toBe(1);
    const after = (await page()).pageInfo.endCursor as string;

    const sse = createSseClient({ url: streamUrls(streamUrl!).sse, headers: { 'x-api-key': own }, retryAttempts: 0 });
    const iterator = sse.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION, variables: { after } });
    const received: string[] = [];
    const reading = (async () => {
      for await (const result of iterator) received.push(String(result.data!.events.event.data.name));
    })();
    try {
      const written: string[] = [];
      for (let i = 0; i < 8; i += 1) {
        const name = `other-${i}`;
        expect((await graphql(own, CREATE_STRATEGY, { name }, otherUrls[i % otherUrls.length])).body.data.createStrategy.error).toBeNull();
        written.push(name);
      }
      await expect.poll(() => received.length, { timeout: 15_000, interval: 100 }).toBeGreaterThanOrEqual(written.length);
      // Long enough for a repeat to arrive, were there one.
      await sleep(1_000);
      expect(received).toEqual(written);
    } finally {
      await iterator.return?.();
      sse.dispose();
      // Ending the stream from this side may end the loop with the client's abort; what was received is checked above.
      await reading.catch(() => undefined);
    }
  });
});
