import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OtsClient, type WebhookEvent } from '@ots/client';
import { freePort } from '@ots/shared/testing/ports';
import { startNodeProcess } from '@ots/shared/testing/processes';
import { useStack } from '../../testing/fixture.ts';
import { startWebhookReceiver } from '../webhook-receiver.ts';

/** examples/webhook-receiver.ts against the real stack: the service's deliveries verify, a forgery does not. */
const t = useStack({ accounts: [] });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A delivery signed as the service signs it (Standard Webhooks), to send the receiver ourselves. */
function signedDelivery(secret: string, id: string, event: object): RequestInit {
  const body = JSON.stringify(event);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` }, body };
}

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** A file for the receiver's handled webhook-ids, in a directory removed after the test. */
function handledFile(): string {
  const directory = mkdtempSync(join(tmpdir(), 'ots-webhook-receiver-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return join(directory, 'handled');
}
const anEvent = { id: 'evt_1', type: 'strategy.created', occurredAt: new Date().toISOString(), data: { id: 'strategy-1' } };

describe('the webhook receiver', () => {
  it('handles a signed delivery and answers 401 to a forged one', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const client = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
    const events: WebhookEvent[] = [];
    const secrets: string[] = [];
    const receiver = await startWebhookReceiver({ secrets, onEvent: (event) => void events.push(event) });
    cleanups.push(() => receiver.close());
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
  });

  it('handles once two deliveries of one webhook-id that arrive together, and answers both with its outcome', async () => {
    const secret = newSecret();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let handled = 0;
    const receiver = await startWebhookReceiver({
      secrets: [secret],
      onEvent: async () => {
        handled += 1;
        await released;
      },
    });
    cleanups.push(() => receiver.close());
    let arrived = 0;
    receiver.server.on('request', () => (arrived += 1));

    const deliveries = [fetch(receiver.url, signedDelivery(secret, 'msg_twice', anEvent)), fetch(receiver.url, signedDelivery(secret, 'msg_twice', anEvent))];
    await expect.poll(() => arrived).toBe(2);
    // Both bodies read and verified while the first handling is still under way.
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    expect((await Promise.all(deliveries)).map((answer) => answer.status)).toEqual([204, 204]);
    expect(handled).toBe(1);
  });

  it('handles again a delivery whose handling failed, when it comes again', async () => {
    const secret = newSecret();
    const attempts: string[] = [];
    const receiver = await startWebhookReceiver({
      secrets: [secret],
      onEvent: (event) => {
        attempts.push(event.id);
        if (attempts.length === 1) throw new Error('the database is down');
      },
    });
    cleanups.push(() => receiver.close());
    expect((await fetch(receiver.url, signedDelivery(secret, 'msg_retried', anEvent))).status).toBe(500);
    expect((await fetch(receiver.url, signedDelivery(secret, 'msg_retried', anEvent))).status).toBe(204);
    expect((await fetch(receiver.url, signedDelivery(secret, 'msg_retried', anEvent))).status).toBe(204);
    expect(attempts).toEqual(['evt_1', 'evt_1']);
  });

  it('handles a delivery once across a restart: the handled webhook-ids are kept in its file', async () => {
    const secret = newSecret();
    const file = handledFile();
    const handled: string[] = [];
    const start = () => startWebhookReceiver({ secrets: [secret], handledFile: file, onEvent: (event) => void handled.push(event.id) });
    const first = await start();
    expect((await fetch(first.url, signedDelivery(secret, 'msg_before_restart', anEvent))).status).toBe(204);
    await first.close();

    const restarted = await start();
    cleanups.push(() => restarted.close());
    expect((await fetch(restarted.url, signedDelivery(secret, 'msg_before_restart', anEvent))).status).toBe(204);
    expect((await fetch(restarted.url, signedDelivery(secret, 'msg_after_restart', { ...anEvent, id: 'evt_2' }))).status).toBe(204);
    expect(handled).toEqual(['evt_1', 'evt_2']);
  });

  it('keeps running when a sender gives up in the middle of a body', async () => {
    const secret = newSecret();
    const port = await freePort();
    const receiver = startNodeProcess(['--import', 'tsx', 'examples/webhook-receiver.ts'], {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      WEBHOOK_SECRET: secret,
      PORT: String(port),
      HANDLED_FILE: handledFile(),
    });
    cleanups.push(() => receiver.child.kill('SIGKILL'));
    await receiver.started(/listening on/, 'the webhook receiver', 20_000);

    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"id":"evt_');
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(receiver.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${port}/webhooks`, signedDelivery(secret, 'msg_after', anEvent))).status).toBe(204);
    expect(receiver.output).toContain('strategy.created');
  });
});
