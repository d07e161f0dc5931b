import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { withFragments, type CreateWebhookEndpointInput } from '../../../testing/client.ts';
import { useStack } from '../../../testing/fixture.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';

const t = useStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50', WEBHOOK_DISPATCH_INTERVAL_MS: '50' }, accounts: ['alice'] });
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const started = await new Receiver().start();
  receivers.push(started);
  return started;
}

afterAll(async () => {
  for (const started of receivers) await started.close();
});

const mutation = (name: string, args: string, selection: string) => withFragments(`mutation { ${name}(${args}) { ${selection} error { ...ErrorFields } } }`);

describe('a strategy change, end to end', () => {
  it('is in the feed and arrives at the endpoint signed to Standard Webhooks, with the event id as webhook-id', async () => {
    const hooks = await receiver();
    const { endpoint, secret } = await t.alice.createdWebhookEndpoint({ url: hooks.url, description: 'desk bot' });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(endpoint).toMatchObject({ url: hooks.url, eventTypes: [], description: 'desk bot', status: 'ENABLED', disabledReason: null });
    hooks.secrets = [secret];

    const strategy = await t.alice.createdStrategy('Momentum');
    const [delivered] = await hooks.waitFor(1);
    expect(delivered!.verified, 'the standardwebhooks verifier accepts the signature').toBeDefined();
    const body = JSON.parse(delivered!.body);
    expect(body).toMatchObject({ type: 'strategy.created', data: { id: strategy.id, name: 'Momentum', status: 'ACTIVE', description: null } });
    expect(delivered!.headers['webhook-id']).toBe(body.id);
    expect(delivered!.headers['content-type']).toBe('application/json');

    const events = await t.alice.waitForEvents(1);
    expect(events).toEqual([{ id: body.id, type: 'strategy.created', occurredAt: body.occurredAt, data: body.data }]);
    expect(body.data.createdAt).toBe(body.occurredAt);
    expect(await t.alice.event(body.id)).toEqual(events[0]);

    // The attempt is recorded and listed.
    const deadline = Date.now() + 20_000;
    let deliveries: { nodes: Record<string, unknown>[] };
    do {
      ({ webhookEndpoint: { deliveries } } = await t.alice.data(`query ($id: ID!) { webhookEndpoint(id: $id) { deliveries(first: 10) { nodes { eventId event { type } attempt attemptedAt statusCode failure succeeded durationMs } } } }`,
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
    const client = await t.newAccount('Types');
    await client.createdWebhookEndpoint({ url: all.url });
    await client.createdWebhookEndpoint({ url: pausesOnly.url, eventTypes: ['strategy.paused'] });
    const { id } = await client.createdStrategy('Carry');
    for (const [name, args] of [
      ['updateStrategy', `id: "${id}", input: { description: "FX carry" }`],
      ['pauseStrategy', `id: "${id}"`],
      ['resumeStrategy', `id: "${id}"`],
      ['archiveStrategy', `id: "${id}"`],
    ] as const) {
      const result = await client.data(mutation(name, args, 'strategy { id }'));
      expect(result[name].error).toBeNull();
    }
    const events = await client.waitForEvents(5);
    expect(events.map((event) => event.type)).toEqual(['strategy.created', 'strategy.updated', 'strategy.paused', 'strategy.resumed', 'strategy.archived']);
    expect(events.map((event) => event.data.status)).toEqual(['ACTIVE', 'ACTIVE', 'PAUSED', 'ACTIVE', 'ARCHIVED']);
    expect(events[1]!.data.description).toBe('FX carry');

    const received = await all.waitFor(5);
    expect(new Set(received.map((hook) => JSON.parse(hook.body).type)).size).toBe(5);
    await pausesOnly.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pausesOnly.received.map((hook) => JSON.parse(hook.body).type)).toEqual(['strategy.paused']);

    const filtered = await client.data(`{ listEvents(filter: { types: ["strategy.paused", "strategy.archived"] }) { nodes { type } } }`);
    expect(filtered.listEvents.nodes).toEqual([{ type: 'strategy.paused' }, { type: 'strategy.archived' }]);
    const after = await client.data(`query ($at: DateTime) { listEvents(filter: { occurredAfter: $at }) { nodes { type } } }`, {
      at: events[3]!.occurredAt,
    });
    expect(after.listEvents.nodes.map((node: { type: string }) => node.type)).not.toContain('strategy.created');
  });
});

describe('account isolation', () => {
  it("never tells A's endpoint about B's events, and B cannot see or manage A's endpoints", async () => {
    const hooks = await receiver();
    const a = await t.newAccount('A');
    const b = await t.newAccount('B');
    const { endpoint, secret } = await a.createdWebhookEndpoint({ url: hooks.url });
    hooks.secrets = [secret];
    await b.createdStrategy('B only');
    await b.waitForEvents(1);
    await a.createdStrategy('A only');
    await hooks.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.received.map((hook) => JSON.parse(hook.body).data.name)).toEqual(['A only']);

    const seen = await b.data(`query ($id: ID!) { webhookEndpoint(id: $id) { id } listWebhookEndpoints { id } }`, { id: endpoint.id });
    expect(seen).toEqual({ webhookEndpoint: null, listWebhookEndpoints: [] });
    const [aEvent] = await a.waitForEvents(1);
    const bEvents = await b.waitForEvents(1);
    expect(bEvents.map((event) => event.id)).not.toContain(aEvent!.id);
    expect((await b.data(`query ($id: ID!) { event(id: $id) { id } }`, { id: aEvent!.id })).event).toBeNull();

    for (const [name, args, selection] of [
      ['updateWebhookEndpoint', `id: "${endpoint.id}", input: { description: "mine" }`, 'webhookEndpoint { id }'],
      ['disableWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { id }'],
      ['enableWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { id }'],
      ['rotateWebhookSigningSecret', `id: "${endpoint.id}"`, 'webhookEndpoint { id } signingSecret'],
      ['deleteWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { id }'],
    ] as const) {
      const result = await b.data(mutation(name, args, selection));
      expect(result[name].error, name).toMatchObject({ code: 'NOT_FOUND', field: 'id' });
      expect(result[name].webhookEndpoint).toBeNull();
    }
    const redeliver = await b.data(mutation('redeliverEvent', `endpointId: "${endpoint.id}", eventId: "${aEvent!.id}"`, 'event { id }'));
    expect(redeliver.redeliverEvent.error).toMatchObject({ code: 'NOT_FOUND', field: 'endpointId' });
    const own = await a.data(withFragments('query ($id: ID!) { webhookEndpoint(id: $id) { ...EndpointFields } }'), { id: endpoint.id });
    expect(own.webhookEndpoint).toMatchObject({ status: 'ENABLED', description: null });
  });
});

describe('endpoint management', () => {
  it('refuses bad input with VALIDATION_FAILED and its field', async () => {
    const client = await t.newAccount('Validation');
    for (const [input, field] of [
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://example.com/hooks' }, 'url'],
      [{ url: 'https://user:pass@example.com/hooks' }, 'url'],
      [{ url: `https://example.com/${'a'.repeat(2048)}` }, 'url'],
      [{ url: 'https://example.com/hooks', eventTypes: ['strategy.created', 'order.exploded'] }, 'eventTypes'],
      [{ url: 'https://example.com/hooks', description: 'two\nlines' }, 'description'],
      [{ url: 'https://example.com/hooks', description: 'x'.repeat(501) }, 'description'],
    ] satisfies [CreateWebhookEndpointInput, string][]) {
      const payload = await client.createWebhookEndpoint(input);
      expect(payload.error, JSON.stringify(input).slice(0, 80)).toMatchObject({ code: 'VALIDATION_FAILED', field });
      expect(payload.webhookEndpoint).toBeNull();
      expect(payload.signingSecret).toBeNull();
    }
    const { endpoint } = await client.createdWebhookEndpoint({ url: 'https://example.com/hooks' });
    const grace = await client.data(mutation('rotateWebhookSigningSecret', `id: "${endpoint.id}", graceSeconds: -1`, 'signingSecret'));
    expect(grace.rotateWebhookSigningSecret.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'graceSeconds' });
    const clear = await client.data(mutation('updateWebhookEndpoint', `id: "${endpoint.id}", input: { url: null }`, 'webhookEndpoint { id }'));
    expect(clear.updateWebhookEndpoint.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'url' });
    const missing = await client.data(mutation('disableWebhookEndpoint', `id: "not-a-uuid"`, 'webhookEndpoint { id }'));
    expect(missing.disableWebhookEndpoint.error).toMatchObject({ code: 'NOT_FOUND', field: 'id' });

    const badFilter = await client.graphql(`{ listEvents(filter: { types: ["nope"] }) { nodes { id } } }`);
    expect(badFilter.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'filter' });
    const badCursor = await client.graphql(`{ listEvents(after: "garbage") { nodes { id } } }`);
    expect(badCursor.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'after' });
  });

  it('allows 16 endpoints per account, then WEBHOOK_ENDPOINT_LIMIT, even for concurrent creates', async () => {
    const client = await t.newAccount('Limit');
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => client.createWebhookEndpoint({ url: `https://example.com/${index}` })));
    expect(results.filter((result) => result.error === null)).toHaveLength(16);
    expect(results.filter((result) => result.error?.code === 'WEBHOOK_ENDPOINT_LIMIT')).toHaveLength(4);
    const listed = await client.data(`{ listWebhookEndpoints { id } }`);
    expect(listed.listWebhookEndpoints).toHaveLength(16);
    const removed = await client.data(mutation('deleteWebhookEndpoint', `id: "${listed.listWebhookEndpoints[0].id}"`, 'webhookEndpoint { id }'));
    expect(removed.deleteWebhookEndpoint).toEqual({ webhookEndpoint: { id: listed.listWebhookEndpoints[0].id }, error: null });
    expect((await client.createWebhookEndpoint({ url: 'https://example.com/again' })).error).toBeNull();
  });

  it('updates, disables (nothing sent), enables, and redelivers what it missed with the same webhook-id', async () => {
    const hooks = await receiver();
    const client = await t.newAccount('Lifecycle');
    const { endpoint, secret } = await client.createdWebhookEndpoint({ url: 'https://example.com/elsewhere' });
    hooks.secrets = [secret];
    const updated = await client.data(mutation('updateWebhookEndpoint', `id: "${endpoint.id}", input: { url: "${hooks.url}", eventTypes: ["strategy.created"], description: "ops" }`, 'webhookEndpoint { ...EndpointFields }'),
    );
    expect(updated.updateWebhookEndpoint.webhookEndpoint).toMatchObject({ url: hooks.url, eventTypes: ['strategy.created'], description: 'ops' });

    const disabled = await client.data(mutation('disableWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { ...EndpointFields }'));
    expect(disabled.disableWebhookEndpoint.webhookEndpoint).toMatchObject({ status: 'DISABLED', disabledReason: 'Disabled by the account' });
    await client.createdStrategy('While disabled');
    const [event] = await client.waitForEvents(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hooks.received).toHaveLength(0);

    const enabled = await client.data(mutation('enableWebhookEndpoint', `id: "${endpoint.id}"`, 'webhookEndpoint { ...EndpointFields }'));
    expect(enabled.enableWebhookEndpoint.webhookEndpoint).toMatchObject({ status: 'ENABLED', disabledReason: null });
    await client.createdStrategy('After enabling');
    const [first] = await hooks.waitFor(1);
    expect(JSON.parse(first!.body).data.name).toBe('After enabling');

    const redelivered = await client.data(mutation('redeliverEvent', `endpointId: "${endpoint.id}", eventId: "${event!.id}"`, 'event { id type }'));
    expect(redelivered.redeliverEvent).toEqual({ event: { id: event!.id, type: 'strategy.created' }, error: null });
    const [, missed] = await hooks.waitFor(2);
    expect(missed!.headers['webhook-id']).toBe(event!.id);
    expect(missed!.verified).toBeDefined();
    expect(JSON.parse(missed!.body)).toEqual(event);
    await client.data(mutation('redeliverEvent', `endpointId: "${endpoint.id}", eventId: "${event!.id}"`, 'event { id }'));
    const [, , again] = await hooks.waitFor(3);
    expect(again!.headers['webhook-id']).toBe(event!.id);
    expect(again!.body).toBe(missed!.body);

    // Deliveries page newest first, keyset-paged.
    const deliveriesQuery = `query ($id: ID!, $after: String) { webhookEndpoint(id: $id) { deliveries(first: 2, after: $after) { nodes { eventId attemptedAt succeeded } pageInfo { hasNextPage endCursor } } } }`;
    let deliveries: { nodes: { eventId: string; attemptedAt: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string } };
    const deadline = Date.now() + 20_000;
    do {
      ({ webhookEndpoint: { deliveries } } = await client.data(deliveriesQuery, { id: endpoint.id }));
    } while (!deliveries.pageInfo.hasNextPage && Date.now() < deadline);
    const { webhookEndpoint: { deliveries: rest } } = await client.data(deliveriesQuery, { id: endpoint.id, after: deliveries.pageInfo.endCursor });
    const all = [...deliveries.nodes, ...rest.nodes];
    expect(all).toHaveLength(3);
    expect(rest.pageInfo.hasNextPage).toBe(false);
    expect(all.map((node) => node.attemptedAt)).toEqual([...all.map((node) => node.attemptedAt)].sort().reverse());
    expect(all.filter((node) => node.eventId === event!.id)).toHaveLength(2);
  });

  it('rotates the secret: during the grace both secrets sign, without it only the new one', async () => {
    const hooks = await receiver();
    const client = await t.newAccount('Rotation');
    const { endpoint, secret: oldSecret } = await client.createdWebhookEndpoint({ url: hooks.url });
    const rotated = await client.data(mutation('rotateWebhookSigningSecret', `id: "${endpoint.id}", graceSeconds: 3600`, 'webhookEndpoint { id } signingSecret'));
    const newSecret: string = rotated.rotateWebhookSigningSecret.signingSecret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);

    await client.createdStrategy('Rotating');
    const [duringGrace] = await hooks.waitFor(1);
    expect(duringGrace!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [oldSecret, newSecret]) {
      expect(() => new Webhook(secret).verify(duringGrace!.body, duringGrace!.headers)).not.toThrow();
    }

    const again = await client.data(mutation('rotateWebhookSigningSecret', `id: "${endpoint.id}", graceSeconds: 0`, 'signingSecret'));
    const latest: string = again.rotateWebhookSigningSecret.signingSecret;
    await client.createdStrategy('Rotated');
    const [, afterGrace] = await hooks.waitFor(2);
    expect(() => new Webhook(latest).verify(afterGrace!.body, afterGrace!.headers)).not.toThrow();
    for (const secret of [oldSecret, newSecret]) {
      expect(() => new Webhook(secret).verify(afterGrace!.body, afterGrace!.headers)).toThrow();
    }
  });
});

describe('the internal ingest route', () => {
  it('refuses a batch without a valid signature', async () => {
    const url = new URL('/internal/events', t.stack.urls.events).toString();
    const body = JSON.stringify({ events: [] });
    const unsigned = await t.stack.post(body, { 'content-type': 'application/json' }, url);
    expect(unsigned.status).toBe(401);
    const forged = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    const now = new Date();
    const wrongKey = await t.stack.post(body, {
      'content-type': 'application/json',
      'webhook-id': 'x',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': forged.sign('x', now, body),
    }, url);
    expect(wrongKey.status).toBe(401);
  });
});
