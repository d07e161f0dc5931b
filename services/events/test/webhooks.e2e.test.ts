import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../../../testing/requests.ts';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';
import {
  createEndpoint,
  createStrategy,
  data,
  ENDPOINT_FIELDS,
  EVENT_FIELDS,
  PAYLOAD_ERROR_FIELDS,
  tryCreateEndpoint,
  waitForEvents,
} from './support.ts';

let stack: TestStack;
let alice: Client;
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const started = await new Receiver().start();
  receivers.push(started);
  return started;
}

beforeAll(async () => {
  stack = await startStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50', WEBHOOK_DISPATCH_INTERVAL_MS: '50' } });
  alice = await stack.createAccountWithKey('Alice');
});

afterAll(async () => {
  for (const started of receivers) await started.close();
  await stack?.close();
});

const mutation = (name: string, args: string, selection: string) => `mutation { ${name}(${args}) { ${selection} ${PAYLOAD_ERROR_FIELDS} } }`;

describe('a strategy change, end to end', () => {
  it('is in the feed and arrives at the endpoint signed to Standard Webhooks, with the event id as webhook-id', async () => {
    const hooks = await receiver();
    const { endpoint, secret } = await createEndpoint(stack, alice, { url: hooks.url, description: 'desk bot' });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint).toMatchObject({ url: hooks.url, eventTypes: [], description: 'desk bot', status: 'ENABLED', disabledReason: null });
    hooks.secrets = [secret];

    const strategy = await createStrategy(stack, alice, 'Momentum');
    const [delivered] = await hooks.waitFor(1);
    expect(delivered!.verified, 'the standardwebhooks verifier accepts the signature').toBeDefined();
    const body = JSON.parse(delivered!.body);
    expect(body).toMatchObject({ type: 'strategy.created', data: { id: strategy.id, name: 'Momentum', status: 'ACTIVE', description: null } });
    expect(delivered!.headers['webhook-id']).toBe(body.id);
    expect(delivered!.headers['content-type']).toBe('application/json');

    const events = await waitForEvents(stack, alice, 1);
    expect(events).toEqual([{ id: body.id, type: 'strategy.created', occurredAt: body.occurredAt, data: body.data }]);
    expect(body.data.createdAt).toBe(body.occurredAt);
    const { event } = await data(stack, alice, `query ($id: ID!) { event(id: $id) { ${EVENT_FIELDS} } }`, { id: body.id });
    expect(event).toEqual(events[0]);

    // The attempt is recorded and listed.
    const deadline = Date.now() + 5_000;
    let deliveries: { nodes: Record<string, unknown>[] };
    do {
      ({ webhookEndpoint: { deliveries } } = await data(
        stack,
        alice,
        `query ($id: ID!) { webhookEndpoint(id: $id) { deliveries(first: 10) { nodes { eventId event { type } attempt attemptedAt statusCode failure succeeded durationMs } } } }`,
        { id: endpoint.id },
      ));
    } while (deliveries.nodes.length === 0 && Date.now() < deadline);
    expect(deliveries.nodes).toEqual([
      expect.objectContaining({ eventId: body.id, event: { type: 'strategy.created' }, attempt: 1, statusCode: 200, failure: null, succeeded: true }),
    ]);
  });

  it('sends each change of a strategy as its own event type, to endpoints subscribed to it only', async () => {
    const all = await receiver();
    const pausesOnly = await receiver();
    const client = await stack.createAccountWithKey('Types');
    await createEndpoint(stack, client, { url: all.url });
    await createEndpoint(stack, client, { url: pausesOnly.url, eventTypes: ['strategy.paused'] });
    const { id } = await createStrategy(stack, client, 'Carry');
    for (const [name, args] of [
      ['updateStrategy', `id: "${id}", input: { description: "FX carry" }`],
      ['pauseStrategy', `id: "${id}"`],
      ['resumeStrategy', `id: "${id}"`],
      ['archiveStrategy', `id: "${id}"`],
    ] as const) {
      const result = await data(stack, client, mutation(name, args, 'strategy { id }'));
      expect(result[name].error).toBeNull();
    }
    const events = await waitForEvents(stack, client, 5);
    expect(events.map((event) => event.type)).toEqual(['strategy.created', 'strategy.updated', 'strategy.paused', 'strategy.resumed', 'strategy.archived']);
    expect(events.map((event) => event.data.status)).toEqual(['ACTIVE', 'ACTIVE', 'PAUSED', 'ACTIVE', 'ARCHIVED']);
    expect(events[1]!.data.description).toBe('FX carry');

    const received = await all.waitFor(5);
    expect(new Set(received.map((hook) => JSON.parse(hook.body).type)).size).toBe(5);
    await pausesOnly.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pausesOnly.received.map((hook) => JSON.parse(hook.body).type)).toEqual(['strategy.paused']);

    const filtered = await data(stack, client, `{ listEvents(filter: { types: ["strategy.paused", "strategy.archived"] }) { nodes { type } } }`);
    expect(filtered.listEvents.nodes).toEqual([{ type: 'strategy.paused' }, { type: 'strategy.archived' }]);
    const after = await data(stack, client, `query ($at: DateTime) { listEvents(filter: { occurredAfter: $at }) { nodes { type } } }`, {
      at: events[3]!.occurredAt,
    });
    expect(after.listEvents.nodes.map((node: { type: string }) => node.type)).not.toContain('strategy.created');
  });
});

describe('account isolation', () => {
  it("never tells A's endpoint about B's events, and B cannot see or manage A's endpoints", async () => {
    const hooks = await receiver();
    const a = await stack.createAccountWithKey('A');
    const b = await stack.createAccountWithKey('B');
    const { endpoint, secret } = await createEndpoint(stack, a, { url: hooks.url });
    hooks.secrets = [secret];
    await createStrategy(stack, b, 'B only');
    await waitForEvents(stack, b, 1);
    await createStrategy(stack, a, 'A only');
    await hooks.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.received.map((hook) => JSON.parse(hook.body).data.name)).toEqual(['A only']);

    const seen = await data(stack, b, `query ($id: ID!) { webhookEndpoint(id: $id) { id } listWebhookEndpoints { id } }`, { id: endpoint.id });
    expect(seen).toEqual({ webhookEndpoint: null, listWebhookEndpoints: [] });
    const [aEvent] = await waitForEvents(stack, a, 1);
    const bEvents = await waitForEvents(stack, b, 1);
    expect(bEvents.map((event) => event.id)).not.toContain(aEvent!.id);
    expect((await data(stack, b, `query ($id: ID!) { event(id: $id) { id } }`, { id: aEvent!.id })).event).toBeNull();

    for (const [name, args, selection] of [
      ['updateWebhookEndpoint', `id: "${endpoint.id}", input: { description: "mine" }`, 'webhookEndpoint { id }'],
      ['disableWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { id }'],
      ['enableWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { id }'],
      ['rotateWebhookSigningSecret', `id: "${endpoint.id}"`, 'webhookEndpoint { id } signingSecret'],
      ['deleteWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { id }'],
    ] as const) {
      const result = await data(stack, b, mutation(name, args, selection));
      expect(result[name].error, name).toMatchObject({ code: 'NOT_FOUND', field: 'id' });
      expect(result[name].webhookEndpoint).toBeNull();
    }
    const redeliver = await data(stack, b, mutation('redeliverEvent', `endpointId: "${endpoint.id}", eventId: "${aEvent!.id}"`, 'event { id }'));
    expect(redeliver.redeliverEvent.error).toMatchObject({ code: 'NOT_FOUND', field: 'endpointId' });
    const own = await data(stack, a, `query ($id: ID!) { webhookEndpoint(id: $id) { ${ENDPOINT_FIELDS} } }`, { id: endpoint.id });
    expect(own.webhookEndpoint).toMatchObject({ status: 'ENABLED', description: null });
  });
});

describe('endpoint management', () => {
  it('refuses bad input with VALIDATION_FAILED and its field', async () => {
    const client = await stack.createAccountWithKey('Validation');
    for (const [input, field] of [
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://example.com/hooks' }, 'url'],
      [{ url: 'https://user:pass@example.com/hooks' }, 'url'],
      [{ url: `https://example.com/${'a'.repeat(2048)}` }, 'url'],
      [{ url: 'https://example.com/hooks', eventTypes: ['strategy.created', 'order.exploded'] }, 'eventTypes'],
      [{ url: 'https://example.com/hooks', description: 'two\nlines' }, 'description'],
      [{ url: 'https://example.com/hooks', description: 'x'.repeat(501) }, 'description'],
    ] as const) {
      const payload = await tryCreateEndpoint(stack, client, input);
      expect(payload.error, JSON.stringify(input).slice(0, 80)).toMatchObject({ code: 'VALIDATION_FAILED', field });
      expect(payload.webhookEndpoint).toBeNull();
      expect(payload.signingSecret).toBeNull();
    }
    const { endpoint } = await createEndpoint(stack, client, { url: 'https://example.com/hooks' });
    const grace = await data(stack, client, mutation('rotateWebhookSigningSecret', `id: "${endpoint.id}", graceSeconds: -1`, 'signingSecret'));
    expect(grace.rotateWebhookSigningSecret.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'graceSeconds' });
    const clear = await data(stack, client, mutation('updateWebhookEndpoint', `id: "${endpoint.id}", input: { url: null }`, 'webhookEndpoint { id }'));
    expect(clear.updateWebhookEndpoint.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'url' });
    const missing = await data(stack, client, mutation('disableWebhookEndpoint', `id: "not-a-uuid"`, 'webhookEndpoint { id }'));
    expect(missing.disableWebhookEndpoint.error).toMatchObject({ code: 'NOT_FOUND', field: 'id' });

    const badFilter = await stack.graphql(client.apiKey, `{ listEvents(filter: { types: ["nope"] }) { nodes { id } } }`);
    expect(badFilter.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'filter' });
    const badCursor = await stack.graphql(client.apiKey, `{ listEvents(after: "garbage") { nodes { id } } }`);
    expect(badCursor.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'after' });
  });

  it('allows 16 endpoints per account, then WEBHOOK_ENDPOINT_LIMIT, even for concurrent creates', async () => {
    const client = await stack.createAccountWithKey('Limit');
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => tryCreateEndpoint(stack, client, { url: `https://example.com/${index}` })));
    expect(results.filter((result) => result.error === null)).toHaveLength(16);
    expect(results.filter((result) => result.error?.code === 'WEBHOOK_ENDPOINT_LIMIT')).toHaveLength(4);
    const listed = await data(stack, client, `{ listWebhookEndpoints { id } }`);
    expect(listed.listWebhookEndpoints).toHaveLength(16);
    const removed = await data(stack, client, mutation('deleteWebhookEndpoint', `id: "${listed.listWebhookEndpoints[0].id}"`, 'webhookEndpoint { id }'));
    expect(removed.deleteWebhookEndpoint).toEqual({ webhookEndpoint: { id: listed.listWebhookEndpoints[0].id }, error: null });
    expect((await tryCreateEndpoint(stack, client, { url: 'https://example.com/again' })).error).toBeNull();
  });

  it('updates, disables (nothing sent), enables, and redelivers what it missed with the same webhook-id', async () => {
    const hooks = await receiver();
    const client = await stack.createAccountWithKey('Lifecycle');
    const { endpoint, secret } = await createEndpoint(stack, client, { url: 'https://example.com/elsewhere' });
    hooks.secrets = [secret];
    const updated = await data(
      stack,
      client,
      mutation('updateWebhookEndpoint', `id: "${endpoint.id}", input: { url: "${hooks.url}", eventTypes: ["strategy.created"], description: "ops" }`, `webhookEndpoint { ${ENDPOINT_FIELDS} }`),
    );
    expect(updated.updateWebhookEndpoint.webhookEndpoint).toMatchObject({ url: hooks.url, eventTypes: ['strategy.created'], description: 'ops' });

    const disabled = await data(stack, client, mutation('disableWebhookEndpoint', `id: "${endpoint.id}"`, `webhookEndpoint { ${ENDPOINT_FIELDS} }`));
    expect(disabled.disableWebhookEndpoint.webhookEndpoint).toMatchObject({ status: 'DISABLED', disabledReason: 'Disabled by the account' });
    await createStrategy(stack, client, 'While disabled');
    const [event] = await waitForEvents(stack, client, 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.received).toHaveLength(0);

    const enabled = await data(stack, client, mutation('enableWebhookEndpoint', `id: "${endpoint.id}"`, `webhookEndpoint { ${ENDPOINT_FIELDS} }`));
    expect(enabled.enableWebhookEndpoint.webhookEndpoint).toMatchObject({ status: 'ENABLED', disabledReason: null });
    await createStrategy(stack, client, 'After enabling');
    const [first] = await hooks.waitFor(1);
    expect(JSON.parse(first!.body).data.name).toBe('After enabling');

    const redelivered = await data(stack, client, mutation('redeliverEvent', `endpointId: "${endpoint.id}", eventId: "${event!.id}"`, 'event { id type }'));
    expect(redelivered.redeliverEvent).toEqual({ event: { id: event!.id, type: 'strategy.created' }, error: null });
    const [, missed] = await hooks.waitFor(2);
    expect(missed!.headers['webhook-id']).toBe(event!.id);
    expect(missed!.verified).toBeDefined();
    expect(JSON.parse(missed!.body)).toEqual(event);
    await data(stack, client, mutation('redeliverEvent', `endpointId: "${endpoint.id}", eventId: "${event!.id}"`, 'event { id }'));
    const [, , again] = await hooks.waitFor(3);
    expect(again!.headers['webhook-id']).toBe(event!.id);
    expect(again!.body).toBe(missed!.body);

    // Deliveries page newest first, keyset-paged.
    const deliveriesQuery = `query ($id: ID!, $after: String) { webhookEndpoint(id: $id) { deliveries(first: 2, after: $after) { nodes { eventId attemptedAt succeeded } pageInfo { hasNextPage endCursor } } } }`;
    let deliveries: { nodes: { eventId: string; attemptedAt: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string } };
    const deadline = Date.now() + 5_000;
    do {
      ({ webhookEndpoint: { deliveries } } = await data(stack, client, deliveriesQuery, { id: endpoint.id }));
    } while (!deliveries.pageInfo.hasNextPage && Date.now() < deadline);
    const { webhookEndpoint: { deliveries: rest } } = await data(stack, client, deliveriesQuery, { id: endpoint.id, after: deliveries.pageInfo.endCursor });
    const all = [...deliveries.nodes, ...rest.nodes];
    expect(all).toHaveLength(3);
    expect(rest.pageInfo.hasNextPage).toBe(false);
    expect(all.map((node) => node.attemptedAt)).toEqual([...all.map((node) => node.attemptedAt)].sort().reverse());
    expect(all.filter((node) => node.eventId === event!.id)).toHaveLength(2);
  });

  it('rotates the secret: during the grace both secrets sign, without it only the new one', async () => {
    const hooks = await receiver();
    const client = await stack.createAccountWithKey('Rotation');
    const { endpoint, secret: oldSecret } = await createEndpoint(stack, client, { url: hooks.url });
    const rotated = await data(stack, client, mutation('rotateWebhookSigningSecret', `id: "${endpoint.id}", graceSeconds: 3600`, 'webhookEndpoint { id } signingSecret'));
    const newSecret: string = rotated.rotateWebhookSigningSecret.signingSecret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);

    await createStrategy(stack, client, 'Rotating');
    const [duringGrace] = await hooks.waitFor(1);
    expect(duringGrace!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [oldSecret, newSecret]) {
      expect(() => new Webhook(secret).verify(duringGrace!.body, duringGrace!.headers)).not.toThrow();
    }

    const again = await data(stack, client, mutation('rotateWebhookSigningSecret', `id: "${endpoint.id}", graceSeconds: 0`, 'signingSecret'));
    const latest: string = again.rotateWebhookSigningSecret.signingSecret;
    await createStrategy(stack, client, 'Rotated');
    const [, afterGrace] = await hooks.waitFor(2);
    expect(() => new Webhook(latest).verify(afterGrace!.body, afterGrace!.headers)).not.toThrow();
    for (const secret of [oldSecret, newSecret]) {
      expect(() => new Webhook(secret).verify(afterGrace!.body, afterGrace!.headers)).toThrow();
    }
  });
});

describe('the internal ingest route', () => {
  it('refuses a batch without a valid signature', async () => {
    const url = new URL('/internal/events', stack.urls.events).toString();
    const body = JSON.stringify({ events: [] });
    const unsigned = await stack.post(body, { 'content-type': 'application/json' }, url);
    expect(unsigned.status).toBe(401);
    const forged = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    const now = new Date();
    const wrongKey = await stack.post(body, {
      'content-type': 'application/json',
      'webhook-id': 'x',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': forged.sign('x', now, body),
    }, url);
    expect(wrongKey.status).toBe(401);
  });
});
