import { describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../../src/index.ts';
import { accountWithOwner, VIEWER } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';

/** API keys in the console: create, list, roll, revoke, bad input, and keys revoked elsewhere. */

const t = useConsoleStack();

describe('API keys in the console', () => {
  it('creates (shown once), lists newest first with status, rolls with a grace and revokes; each through the CLI module into the log', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Keys');
    const created = await owner.client.post('/console/api/keys', { label: 'trading bot', expires: '30d' });
    expect(created.status).toBe(201);
    expect(created.body.apiKey).toMatch(/^svc_live_[0-9A-Za-z]{38}$/);
    expect(created.body.key).toMatchObject({ label: 'trading bot', environment: 'LIVE', status: 'Active', revokedAt: null, lastUsedAt: null });
    expect(Date.parse(created.body.key.expiresAt) - Date.now()).toBeGreaterThan(30 * 86_400_000 - 120_000);
    const viewer = await t.stack.graphql(created.body.apiKey, VIEWER);
    expect(viewer.body.data.viewer).toEqual({ account: { id: owner.accountId }, apiKey: { id: created.body.key.id } });

    const listed = await owner.client.get('/console/api/keys');
    expect(listed.body.keys.map((key: { id: string }) => key.id)).toEqual([created.body.key.id, owner.apiKeyId]);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.apiKey.slice(9, 30));
    expect(Object.keys(listed.body.keys[0]).sort()).toEqual([
      'allowedCidrs',
      'createdAt',
      'displayPrefix',
      'environment',
      'expiresAt',
      'id',
      'label',
      'lastUsedAt',
      'replacedByKeyId',
      'replacesKeyId',
      'revokedAt',
      'scopes',
      'status',
    ]);

    const rolled = await owner.client.post(`/console/api/keys/${created.body.key.id}/roll`, { grace: '1h' });
    expect(rolled.status).toBe(201);
    expect(rolled.body.previousKey).toMatchObject({ id: created.body.key.id, status: 'Expiring' });
    expect(Date.parse(rolled.body.previousKey.expiresAt) - Date.now()).toBeLessThanOrEqual(3_600_000);
    expect(rolled.body.key).toMatchObject({ label: 'trading bot', status: 'Active' });
    // Made to expire after 30 days: its successor expires 30 days after the roll.
    expect(Date.parse(rolled.body.key.expiresAt) - Date.now()).toBeGreaterThan(30 * 86_400_000 - 120_000);
    expect((await t.stack.graphql(created.body.apiKey, VIEWER)).status).toBe(200);
    expect((await t.stack.graphql(rolled.body.apiKey, VIEWER)).status).toBe(200);

    const revoked = await owner.client.post(`/console/api/keys/${rolled.body.key.id}/revoke`, {});
    expect(revoked.status).toBe(200);
    expect(revoked.body.key).toMatchObject({ id: rolled.body.key.id, status: 'Revoked', revokedAt: expect.any(String) });
    const again = await owner.client.post(`/console/api/keys/${rolled.body.key.id}/revoke`, {});
    expect(again.body.key.revokedAt).toBe(revoked.body.key.revokedAt);
    const rollRevoked = await owner.client.post(`/console/api/keys/${rolled.body.key.id}/roll`, { grace: 'now' });
    expect(rollRevoked.status).toBe(409);
    expect(rollRevoked.body.detail).toEqual(expect.any(String));

    const log = await owner.client.get('/console/api/security-log');
    const keyEvents = log.body.events.filter((event: { type: string }) => event.type.startsWith('key.'));
    expect(keyEvents.map((event: { type: string; keyDisplayPrefix: string }) => [event.type, event.keyDisplayPrefix])).toEqual([
      ['key.revoked', rolled.body.key.displayPrefix],
      ['key.rolled', created.body.key.displayPrefix],
      ['key.created', rolled.body.key.displayPrefix],
      ['key.created', created.body.key.displayPrefix],
      ['key.created', listed.body.keys[1].displayPrefix],
    ]);
    for (const event of keyEvents.slice(0, 4)) expect(event).toMatchObject({ ownerEmail: owner.email, clientAddress: '127.0.0.1', userAgent: expect.any(String) });
    // The first key came from the operator's CLI module: no owner.
    expect(keyEvents[4]).toMatchObject({ ownerEmail: null, clientAddress: null, userAgent: null });
  });

  it('refuses bad input with the field named', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Bad input');
    const { key } = await createKey(t.stack.operator, { accountId: owner.accountId, name: 'k' });
    const cases: [string, unknown, string][] = [
      ['/console/api/keys', {}, 'label'],
      ['/console/api/keys', { label: '   ' }, 'label'],
      ['/console/api/keys', { label: 'x'.repeat(101) }, 'label'],
      ['/console/api/keys', { label: 'nul\u0000byte' }, 'label'],
      ['/console/api/keys', { label: 'ok', expires: '7d' }, 'expires'],
      ['/console/api/keys', { label: 'ok', expires: 'date' }, 'expiresOn'],
      ['/console/api/keys', { label: 'ok', expires: 'date', expiresOn: '2020-01-01' }, 'expiresOn'],
      ['/console/api/keys', { label: 'ok', expires: 'date', expiresOn: '2030-02-30' }, 'expiresOn'],
      ['/console/api/keys', { label: 'ok', environment: 'SANDBOX' }, 'environment'],
      [`/console/api/keys/${key.id}/roll`, {}, 'grace'],
      [`/console/api/keys/${key.id}/roll`, { grace: '2h' }, 'grace'],
    ];
    for (const [path, body, field] of cases) {
      const result = await owner.client.post(path, body);
      expect(result.status, JSON.stringify(body)).toBe(400);
      expect(result.body).toEqual({ detail: expect.any(String), field });
    }
    const dated = await owner.client.post('/console/api/keys', { label: 'dated', expires: 'date', expiresOn: '2031-06-30' });
    expect(dated.body.key.expiresAt).toBe('2031-06-30T23:59:59.999Z');
    expect(Number((await t.db.query('select count(*) from accounts.api_keys where account_id = $1', [owner.accountId])).rows[0].count)).toBe(3);
  });

  it('a key revoked in the console gets 401 on /graphql within 1 s', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Revoke within 1 s');
    const created = await owner.client.post('/console/api/keys', { label: 'soon revoked' });
    expect((await t.stack.graphql(created.body.apiKey, VIEWER)).status).toBe(200);
    const revoked = await owner.client.post(`/console/api/keys/${created.body.key.id}/revoke`, {});
    const revokedAt = Date.parse(revoked.body.key.revokedAt);
    let status = 0;
    while (Date.now() < revokedAt + 3_000) {
      const sentAt = Date.now();
      status = (await t.stack.graphql(created.body.apiKey, VIEWER)).status;
      if (sentAt > revokedAt + 1_000) expect(status).toBe(401);
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(401);
  });
});

describe('keys revoked elsewhere', () => {
  it('a key the CLI module revokes shows as Revoked in the console, logged without an owner', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'CLI revoke');
    await revokeKey(t.stack.operator, { keyId: owner.apiKeyId });
    const keys = await owner.client.get('/console/api/keys');
    expect(keys.body.keys[0]).toMatchObject({ id: owner.apiKeyId, status: 'Revoked' });
    const log = await owner.client.get('/console/api/security-log');
    expect(log.body.events[0]).toMatchObject({ type: 'key.revoked', ownerEmail: null });
  });
});
