import { describe, expect, it } from 'vitest';
import { OtsClient, type WebhookEvent } from '@ots/client';
import { useStack } from '../../testing/fixture.ts';
import { startWebhookReceiver } from '../webhook-receiver.ts';

/** examples/webhook-receiver.ts against the real stack: the service's deliveries verify, a forgery does not. */
const t = useStack({ accounts: [] });

describe('the webhook receiver', () => {
  it('handles a signed delivery and answers 401 to a forged one', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const client = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
    const events: WebhookEvent[] = [];
    const secrets: string[] = [];
    const receiver = await startWebhookReceiver({ secrets, onEvent: (event) => void events.push(event) });
    try {
      const { signingSecret } = await client.webhooks.create({ url: receiver.url, eventTypes: ['strategy.created'] });
      secrets.push(signingSecret);
      const strategy = await client.strategies.create({ name: 'Hooked' });
      await expect.poll(() => events.map((event) => [event.type, event.data.id])).toEqual([['strategy.created', strategy.id]]);

      const forged = await fetch(receiver.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'webhook-id': 'msg_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
        body: JSON.stringify({ id: 'x', type: 'strategy.created', occurredAt: new Date().toISOString(), data: {} }),
      });
      expect(forged.status).toBe(401);
      expect(events).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });
});
