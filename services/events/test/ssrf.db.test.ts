import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiveId } from '@ots/shared/ids';
import { createLogger } from '@ots/shared/logger';
import { testScope } from '@ots/shared/testing/scope';
import { dispatchDueMessages } from '../src/dispatcher.ts';
import { createEndpoint, updateEndpointSettings, type EventsScope } from '../src/operations.ts';
import { nonPublicRange } from '../src/url-policy.ts';
import { postWebhook } from '../src/webhook-sender.ts';
import { ingest, ManualClock, strategyEvent, secretKey, useEventsDatabase } from './support/fixtures.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';

const { db } = await useEventsDatabase();
let receiver: Receiver;

beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.close();
});

describe('address ranges', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.100.100.200', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'linkLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    // IPv4 carried in IPv6, in every spelling, whatever it carries: a host's stack unwraps it. (ipaddr.js
    // reads a dotted suffix as mapped; URLs and DNS answers come in the hex spelling.)
    ['::127.0.0.1', 'IPv4-'],
    ['::7f00:1', 'IPv4-compatible'],
    ['::a9fe:a9fe', 'IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-'],
    ['::ffff:7f00:1', 'IPv4-mapped'],
    ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped'],
    ['::ffff:8.8.8.8', 'IPv4-mapped'],
    ['::ffff:0:7f00:1', 'rfc6145'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['2002:7f00:1::', '6to4'],
    ['4000::1', 'outside global unicast'],
  ])('%s is refused (%s)', (address, range) => {
    expect(nonPublicRange(address)).toContain(range);
  });

  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111'])('%s is public', (address) => {
    expect(nonPublicRange(address)).toBeUndefined();
  });
});

describe('in production', () => {
  const context = (): EventsScope => ({ ...testScope(db, randomUUID()), production: true, secretKey, now: () => new Date() });

  it.each([
    ['http://example.com/hooks', 'https://'],
    ['https://127.0.0.1/hooks', 'loopback'],
    ['https://[::1]/hooks', 'loopback'],
    ['https://169.254.169.254/latest/meta-data', 'linkLocal'],
    ['https://10.0.0.8/hooks', 'private'],
    ['https://[::ffff:192.168.0.1]/hooks', 'private'],
    // A name's addresses are not told: the client learns only that they are not all public.
    ['https://localhost/hooks', 'localhost does not resolve to public addresses only'],
    ['https://[::127.0.0.1]/', 'IPv4-compatible'],
    ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped'],
    ['https://[::ffff:7f00:1]/', 'IPv4-mapped'],
    ['https://[0:0:0:0:0:ffff:a9fe:a9fe]/latest/meta-data', 'IPv4-mapped'],
    ['https://[::ffff:0:7f00:1]/', 'rfc6145'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'rfc6052'],
  ])('refuses %s when the endpoint is saved', async (url, reason) => {
    const created = await createEndpoint(context(), { url });
    expect(created.ok).toBe(false);
    expect(!created.ok && created.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'url' });
    expect(!created.ok && created.error.message).toContain(reason);
  });

  it('refuses the same on update', async () => {
    const owner = context();
    const created = await createEndpoint({ ...owner, production: false }, { url: 'https://example.com/hooks' });
    if (!created.ok) throw new Error(created.error.message);
    const updated = await updateEndpointSettings(owner, { id: receiveId(created.value.endpoint.id), url: 'https://localhost:8443/x' });
    expect(!updated.ok && updated.error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'url' });
  });

  it('checks again at connect time: a saved name that now resolves to loopback (DNS rebinding) gets no request', async () => {
    const port = new URL(receiver.url).port;
    for (const url of [`https://localhost:${port}/hooks`, `https://127.0.0.1:${port}/hooks`, `https://[::127.0.0.1]:${port}/hooks`, `https://[::ffff:7f00:1]:${port}/hooks`]) {
      const answer = await postWebhook({ url, headers: {}, body: '{}', production: true, timeoutMs: 2_000 });
      expect(answer).toMatchObject({ statusCode: null, succeeded: false });
      expect(answer.failure).toMatch(/^address not allowed: .*(loopback|localhost does not resolve to public addresses only)/);
    }
    const plain = await postWebhook({ url: receiver.url, headers: {}, body: '{}', production: true, timeoutMs: 2_000 });
    expect(plain.failure).toBe('scheme not allowed: http:');
    expect(receiver.received).toHaveLength(0);

    // Through the dispatcher: the endpoint was saved while the name was public (here: written as is).
    const clock = new ManualClock();
    const accountId = randomUUID();
    const created = await createEndpoint({ ...testScope(db, accountId), production: false, secretKey, now: () => clock.now() }, { url: `https://localhost:${port}/hooks` });
    if (!created.ok) throw new Error(created.error.message);
    const event = strategyEvent(accountId, clock.now());
    await ingest(db, [event], clock.now());
    await dispatchDueMessages({ db, log: createLogger('test', 'silent'), production: true, clock, random: () => 0.5, secretKey });
    const [attempt] = await db.selectFrom('webhook_attempts').selectAll().where('event_id', '=', event.id).execute();
    expect(attempt).toMatchObject({ status_code: null, succeeded: false });
    expect(attempt!.failure).toMatch(/^address not allowed/);
    expect(receiver.received).toHaveLength(0);
  });
});

describe('outside production', () => {
  it('accepts http:// and 127.0.0.1, so that tests and local development receive', async () => {
    const created = await createEndpoint({ ...testScope(db, randomUUID()), production: false, secretKey, now: () => new Date() }, { url: receiver.url });
    expect(created.ok).toBe(true);
    const answer = await postWebhook({ url: receiver.url, headers: {}, body: '{}', production: false, timeoutMs: 2_000 });
    expect(answer).toMatchObject({ statusCode: 200, succeeded: true, failure: null });
  });
});
