import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useStack } from '../../../testing/fixture.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';

const t = useStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50', WEBHOOK_DISPATCH_INTERVAL_MS: '50' }, accounts: [] });
let receiver: Receiver;

beforeAll(async () => {
  receiver = await new Receiver().start();
});

afterAll(async () => {
  await receiver?.close();
});

describe('the events service stopped mid-delivery and started again', () => {
  it('loses nothing and doubles nothing: the interrupted webhook is sent again with its webhook-id, changes made meanwhile arrive', async () => {
    const client = await t.newAccount('Outage');
    const { endpoint, secret } = await client.createdWebhookEndpoint({ url: receiver.url });
    receiver.secrets = [secret];
    receiver.answerNext('hang');

    await client.createdStrategy('Before the stop');
    const [interrupted] = await receiver.waitFor(1);
    await t.stack.stopService('events');

    // The change commits in strategies; its event waits in the outbox while events is down.
    await client.createdStrategy('During the stop');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(1);

    await t.stack.startService('events');
    const received = await receiver.waitFor(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(3);
    expect(received.every((hook) => hook.verified !== undefined)).toBe(true);
    const byName = (name: string) => received.filter((hook) => JSON.parse(hook.body).data.name === name);
    expect(byName('Before the stop').map((hook) => hook.headers['webhook-id'])).toEqual([
      interrupted!.headers['webhook-id'],
      interrupted!.headers['webhook-id'],
    ]);
    expect(byName('During the stop')).toHaveLength(1);

    const events = await client.waitForEvents(2);
    expect(events.map((event) => event.data.name)).toEqual(['Before the stop', 'During the stop']);

    const { webhookEndpoint } = await client.data(`query ($id: ID!) { webhookEndpoint(id: $id) { status deliveries { nodes { eventId attempt statusCode failure succeeded } } } }`,
      { id: endpoint.id },
    );
    expect(webhookEndpoint.status).toBe('ENABLED');
    const first = webhookEndpoint.deliveries.nodes.filter((node: { eventId: string }) => node.eventId === interrupted!.headers['webhook-id']);
    // The interrupted attempt took no step of the retry schedule: the one replacing it keeps its number.
    expect(first).toEqual([
      { eventId: interrupted!.headers['webhook-id'], attempt: 1, statusCode: 200, failure: null, succeeded: true },
      { eventId: interrupted!.headers['webhook-id'], attempt: 1, statusCode: null, failure: expect.stringMatching(/^interrupted/), succeeded: false },
    ]);
  });
});
