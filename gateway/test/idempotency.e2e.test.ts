import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { IdempotencyStore, openKeyStore, type OpenedKeyStore } from '@ots/accounts';
import { useStack, type ApiClient } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';
import { startGateway } from '../src/server.ts';

/** Contract section 4: `Idempotency-Key` on every mutation, per account, kept 24 hours in Postgres. */
const t = useStack();

const SUBMIT = `mutation Submit($symbol: String!) {
  submitOrder(input: { symbol: $symbol, side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id symbol } error { code } }
}`;
const CREATE_STRATEGY = 'mutation($name: String!) { createStrategy(input: { name: $name }) { strategy { id } error { code } } }';

let keyCounter = 0;
const freshKey = () => `test-key-${process.pid}-${(keyCounter += 1)}`;

function send(client: ApiClient, key: string | undefined, query: string, variables: Record<string, unknown>, url = t.stack.gatewayUrl): Promise<HttpResult> {
  return t.stack.post(
    JSON.stringify({ query, variables }),
    { 'content-type': 'application/json', 'x-api-key': client.apiKey, ...(key === undefined ? {} : { 'idempotency-key': key }) },
    url,
  );
}

async function ordersOf(client: ApiClient, symbol: string) {
  return (await client.listAllOrders({ filter: { symbol } })).length;
}

const replicas: { gateway: RunningServer; keys: OpenedKeyStore }[] = [];
async function startReplica() {
  const logger = createLogger('replica', 'silent');
  const keys = openKeyStore(t.stack.config, logger, { listen: true });
  const gateway = await startGateway({ config: t.stack.config, keyStore: keys.keyStore, redis: keys.redis, logger, port: 0, isReady: async () => true });
  const replica = { gateway, keys };
  replicas.push(replica);
  return replica;
}
async function stopReplica(replica: { gateway: RunningServer; keys: OpenedKeyStore }) {
  await replica.gateway.close();
  await replica.keys.close();
  replicas.splice(replicas.indexOf(replica), 1);
}
afterAll(async () => {
  for (const replica of [...replicas]) await stopReplica(replica);
});

describe('Idempotency-Key', () => {
  it('answers a repeat with the first answer and Idempotent-Replayed, running the mutation once', async () => {
    const key = freshKey();
    const first = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.A' });
    const second = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.A' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await ordersOf(t.alice, 'IDEM.A')).toBe(1);
  });

  it('runs a repeat again without the header, and ignores the header on queries', async () => {
    await send(t.alice, undefined, SUBMIT, { symbol: 'IDEM.B' });
    await send(t.alice, undefined, SUBMIT, { symbol: 'IDEM.B' });
    expect(await ordersOf(t.alice, 'IDEM.B')).toBe(2);
    const key = freshKey();
    const query = await send(t.alice, key, '{ viewer { account { id } } }', {});
    const again = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.B' });
    expect(query.headers.get('idempotent-replayed')).toBeNull();
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await ordersOf(t.alice, 'IDEM.B')).toBe(3);
  });

  it('refuses the same key with a different body with 422, and runs nothing', async () => {
    const key = freshKey();
    await send(t.alice, key, SUBMIT, { symbol: 'IDEM.C' });
    const other = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.D' });
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ detail: 'Idempotency-Key was used with a different request' });
    expect(await ordersOf(t.alice, 'IDEM.D')).toBe(0);
  });

  it('treats a repeat whose variables are in another order as the same request', async () => {
    const key = freshKey();
    const query = 'mutation($a: String!, $b: String) { createStrategy(input: { name: $a, description: $b }) { strategy { id } } }';
    const first = await send(t.alice, key, query, { a: `idem-order-${key}`, b: 'x' });
    const second = await send(t.alice, key, query, { b: 'x', a: `idem-order-${key}` });
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
  });

  it('treats no variables, null and {} as the same request', async () => {
    const key = freshKey();
    const query = `mutation { createStrategy(input: { name: "idem-empty-${key}" }) { strategy { id } } }`;
    const headers = { 'content-type': 'application/json', 'x-api-key': t.alice.apiKey, 'idempotency-key': key };
    const first = await t.stack.post(JSON.stringify({ query }), headers);
    for (const variables of [null, {}]) {
      const repeat = await t.stack.post(JSON.stringify({ query, variables }), headers);
      expect(repeat.headers.get('idempotent-replayed')).toBe('true');
      expect(repeat.body).toEqual(first.body);
    }
  });

  it('keeps keys per account: the same key from another account runs for that account', async () => {
    const key = freshKey();
    await send(t.alice, key, SUBMIT, { symbol: 'IDEM.E' });
    const bobs = await send(t.bob, key, SUBMIT, { symbol: 'IDEM.E' });
    expect(bobs.headers.get('idempotent-replayed')).toBeNull();
    expect(bobs.body.data.submitOrder.orderSubmission).not.toBeNull();
    expect(await ordersOf(t.bob, 'IDEM.E')).toBe(1);
  });

  it('refuses a key that is not 1 to 255 printable ASCII characters with 400', async () => {
    for (const key of ['x'.repeat(256), 'tab\there']) {
      const result = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.F' });
      expect(result.status).toBe(400);
    }
    expect(await ordersOf(t.alice, 'IDEM.F')).toBe(0);
  });

  it('runs one of many concurrent requests with one key, on two replicas: the others get 409 or the replay', async () => {
    const replica = await startReplica();
    const key = freshKey();
    const name = `idem-concurrent-${key}`;
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(t.alice, key, CREATE_STRATEGY, { name }, i % 2 === 0 ? t.stack.gatewayUrl : replica.gateway.url)),
    );
    const ran = results.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
    expect(ran).toHaveLength(1);
    for (const result of results) {
      if (result.status === 409) expect(result.body).toEqual({ detail: 'A request with this Idempotency-Key is in progress' });
      else expect(result.body).toEqual(ran[0]!.body);
    }
    expect(ran[0]!.body.data.createStrategy.error).toBeNull();
    const strategies = await t.alice.data('{ listStrategies(first: 200) { nodes { name } } }');
    expect(strategies.listStrategies.nodes.filter((s: { name: string }) => s.name === name)).toHaveLength(1);
  });

  it('remembers an answer across a gateway restart', async () => {
    const before = await startReplica();
    const key = freshKey();
    const first = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.G' }, before.gateway.url);
    await stopReplica(before);
    const after = await startReplica();
    const repeat = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.G' }, after.gateway.url);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(repeat.body).toEqual(first.body);
    expect(await ordersOf(t.alice, 'IDEM.G')).toBe(1);
  });

  it('does not keep the answer of an outage: the retry with the same key runs once the service is back', async () => {
    const key = freshKey();
    await t.stack.stopService('orders');
    let down: HttpResult;
    try {
      down = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.H' });
    } finally {
      await t.stack.startService('orders');
    }
    expect(down.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    const retried = await send(t.alice, key, SUBMIT, { symbol: 'IDEM.H' });
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.data.submitOrder.orderSubmission.symbol).toBe('IDEM.H');
    expect(await ordersOf(t.alice, 'IDEM.H')).toBe(1);
  });

  it('forgets a key after 24 hours, and a claim abandoned past its lease can be taken over by the same request', async () => {
    const store = new IdempotencyStore(t.stack.running.keys.db, { leaseMs: 1_000 });
    const hash = Buffer.alloc(32, 1);
    const other = Buffer.alloc(32, 2);
    const now = new Date();
    const key = freshKey();
    expect(await store.claim(t.alice.accountId, key, hash, now)).toEqual({ kind: 'claimed' });
    expect(await store.claim(t.alice.accountId, key, hash, now)).toEqual({ kind: 'in-progress' });
    const afterLease = new Date(now.getTime() + 2_000);
    expect(await store.claim(t.alice.accountId, key, other, afterLease)).toEqual({ kind: 'different-request' });
    expect(await store.claim(t.alice.accountId, key, hash, afterLease)).toEqual({ kind: 'claimed' });
    await store.complete(t.alice.accountId, key, { status: 200, contentType: 'application/json', body: '{}' });
    expect(await store.claim(t.alice.accountId, key, other, afterLease)).toEqual({ kind: 'different-request' });
    const nextDay = new Date(afterLease.getTime() + 24 * 60 * 60 * 1000 + 1);
    expect(await store.claim(t.alice.accountId, key, other, nextDay)).toEqual({ kind: 'claimed' });
    const later = new Date(nextDay.getTime() + 24 * 60 * 60 * 1000 + 1);
    expect(await store.purgeExpired(later)).toBeGreaterThanOrEqual(1);
  });
});
