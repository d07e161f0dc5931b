import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { StandardWebhook } from '../src/webhook-signature.ts';

const secret = `whsec_${Buffer.from('a key of thirty-two bytes for it').toString('base64')}`;

describe('StandardWebhook: the standardwebhooks package with Node’s HMAC', () => {
  it('signs exactly as the package does, a string or a Buffer, with or without the whsec_ prefix', () => {
    const at = new Date('2026-11-21T14:03:07.120Z');
    for (const body of ['{"id":"e1"}', '', JSON.stringify({ text: 'naïve €' }), 'x'.repeat(50_000)]) {
      expect(new StandardWebhook(secret).sign('msg_1', at, body)).toBe(new Webhook(secret).sign('msg_1', at, body));
      expect(new StandardWebhook(secret).sign('msg_1', at, Buffer.from(body))).toBe(new Webhook(secret).sign('msg_1', at, body));
    }
    expect(new StandardWebhook(secret.slice('whsec_'.length)).sign('msg_1', at, '{}')).toBe(new Webhook(secret).sign('msg_1', at, '{}'));
  });

  it('verifies what the package signed, and the package verifies what it signed', () => {
    const body = JSON.stringify({ events: [{ id: 'e1' }] });
    const now = new Date();
    const headersBy = (webhook: Webhook) => ({ 'webhook-id': 'msg_2', 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': webhook.sign('msg_2', now, body) });
    expect(new StandardWebhook(secret).verify(body, headersBy(new Webhook(secret)))).toEqual({ events: [{ id: 'e1' }] });
    expect(new Webhook(secret).verify(body, headersBy(new StandardWebhook(secret)))).toEqual({ events: [{ id: 'e1' }] });
  });

  it('refuses a changed body, another secret and an old timestamp', () => {
    const now = new Date();
    const headers = { 'webhook-id': 'msg_3', 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new StandardWebhook(secret).sign('msg_3', now, '{"a":1}') };
    expect(() => new StandardWebhook(secret).verify('{"a":2}', headers)).toThrow(WebhookVerificationError);
    expect(() => new StandardWebhook(`whsec_${Buffer.alloc(32, 9).toString('base64')}`).verify('{"a":1}', headers)).toThrow(WebhookVerificationError);
    const old = new Date(now.getTime() - 6 * 60_000);
    const oldHeaders = { ...headers, 'webhook-timestamp': String(Math.floor(old.getTime() / 1000)), 'webhook-signature': new StandardWebhook(secret).sign('msg_3', old, '{"a":1}') };
    expect(() => new StandardWebhook(secret).verify('{"a":1}', oldHeaders)).toThrow('Message timestamp too old');
  });
});
