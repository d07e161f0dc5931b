import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';
import { createEndpoint, createStrategy, data, waitForEvents } from './support.ts';

let stack: TestStack;
let receiver: Receiver;

beforeAll(async () => {
  stack = await startStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50', WEBHOOK_DISPATCH_INTERVAL_MS: '50' } });
  receiver = await new Receiver().start();
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

describe('the events service stopped mid-delivery and started again', () => {
  it('loses nothing and doubles nothing: the interrupted webhook is sent again with its webhook-id, changes made meanwhile arrive', async () => {
    const client = await stack.createAccountWithKey('Outage');
    const { endpoint, secret } = await createEndpoint(stack, client, { url: receiver.url });
    receiver.secrets = [secret];
    receiver.answerNext('hang');

    await createStrategy(stack, client, 'Before the stop');
    const [interrupted] = await receiver.waitFor(1);
    await stack.stopService('events');

    // The change commits in strategies; its event waits in the outbox while events is down.
    await createStrategy(stack, client, 'During the stop');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(1);

    await stack.startService('events');
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

    const events = await waitForEvents(stack, client, 2);
    expect(events.map((event) => event.data.name)).toEqual(['Before the stop', 'During the stop']);

    const { webhookEndpoint } = await data(
      stack,
      client,
      `query ($id: ID!) { webhookEndpoint(id: $id) { status deliveries { nodes { eventId attempt statusCode failure succeeded } } } }`,
      { id: endpoint.id },
    );
    expect(webhookEndpoint.status).toBe('ENABLED');
    const first = webhookEndpoint.deliveries.nodes.filter((node: { eventId: string }) => node.eventId === interrupted!.headers['webhook-id']);
    expect(first).toEqual([
      { eventId: interrupted!.headers['webhook-id'], attempt: 2, statusCode: 200, failure: null, succeeded: true },
      { eventId: interrupted!.headers['webhook-id'], attempt: 1, statusCode: null, failure: expect.stringMatching(/^interrupted/), succeeded: false },
    ]);
  });
});
