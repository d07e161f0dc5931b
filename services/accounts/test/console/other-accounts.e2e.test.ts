import { describe, expect, it } from 'vitest';
import { createKey } from '../../src/index.ts';
import { accountWithOwner, ConsoleClient, NOT_FOUND, SIGN_IN_REQUIRED, VIEWER } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';

/** An owner sees and touches nothing of another account through the console. */

const t = useConsoleStack();

describe("an owner of account A and account B's keys and log", () => {
  it('sees and touches nothing of B through any console endpoint', async () => {
    const a = await accountWithOwner(t.stack, t.base, 'Account A');
    const b = await accountWithOwner(t.stack, t.base, 'Account B');
    const bKey = await b.client.post('/console/api/keys', { label: 'B only' });
    for (let i = 0; i < 55; i += 1) await createKey(t.stack.operator, { accountId: b.accountId, name: `b${i}` });
    const bLog = await b.client.get('/console/api/security-log');
    expect(bLog.body.nextCursor).toEqual(expect.any(String));
    const bState = async () => JSON.stringify((await t.db.query('select * from accounts.api_keys where account_id = $1 order by id', [b.accountId])).rows);
    const before = await bState();

    const session = await a.client.get('/console/api/session');
    expect(session.body.account.id).toBe(a.accountId);
    const keys = await a.client.get('/console/api/keys');
    expect(keys.body.keys.map((key: { id: string }) => key.id)).toEqual([a.apiKeyId]);
    for (const id of [bKey.body.key.id, b.apiKeyId]) {
      for (const [path, body] of [
        [`/console/api/keys/${id}/roll`, { grace: 'now' }],
        [`/console/api/keys/${id}/revoke`, {}],
      ] as const) {
        const result = await a.client.post(path, body);
        expect(result.status, path).toBe(404);
        expect(result.body).toEqual(NOT_FOUND);
      }
    }
    for (const id of ['not-a-uuid', '00000000-0000-7000-8000-000000000000']) {
      expect((await a.client.post(`/console/api/keys/${id}/revoke`, {})).body).toEqual(NOT_FOUND);
    }
    const aLog = await a.client.get('/console/api/security-log');
    expect(aLog.status).toBe(200);
    // B's cursor is sealed to B's account: A's log refuses it.
    const withBCursor = await a.client.get(`/console/api/security-log?after=${encodeURIComponent(bLog.body.nextCursor)}`);
    expect(withBCursor.status).toBe(400);
    for (const log of [aLog, withBCursor]) {
      const text = JSON.stringify(log.body);
      expect(text).not.toContain(b.email);
      expect(text).not.toContain(bKey.body.key.displayPrefix);
    }
    // Creating acts on A's account alone.
    const made = await a.client.post('/console/api/keys', { label: 'A new' });
    expect((await t.stack.graphql(made.body.apiKey, VIEWER)).body.data.viewer.account.id).toBe(a.accountId);
    await a.client.post('/console/api/sign-out', {});

    expect(await bState()).toBe(before);
    expect((await t.stack.graphql(bKey.body.apiKey, VIEWER)).status).toBe(200);
    expect((await b.client.get('/console/api/session')).status).toBe(200);
  });

  it("pages B's own log newest first, 50 a page, none skipped or repeated", async () => {
    const b = await accountWithOwner(t.stack, t.base, 'Paged log');
    for (let i = 0; i < 60; i += 1) await createKey(t.stack.operator, { accountId: b.accountId, name: `p${i}` });
    const first = await b.client.get('/console/api/security-log');
    expect(first.body.events).toHaveLength(50);
    const second = await b.client.get(`/console/api/security-log?after=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.nextCursor).toBeNull();
    const all = [...first.body.events, ...second.body.events];
    const total = Number((await t.db.query('select count(*) from accounts.security_events where account_id = $1', [b.accountId])).rows[0].count);
    expect(all).toHaveLength(total);
    expect(new Set(all.map((event) => event.id)).size).toBe(total);
    const times = all.map((event) => Date.parse(event.occurredAt));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect((await b.client.get('/console/api/security-log?after=garbage')).status).toBe(400);
    // The cursor shows nothing: not the time of the event it follows, nor the log's count of every account's events.
    const sealed = Buffer.from(first.body.nextCursor, 'base64url').toString('latin1');
    expect(sealed).not.toContain(first.body.events.at(-1).occurredAt.slice(0, 10));
    expect(sealed).not.toMatch(/^\[/);
  });

  it('every signed-in endpoint answers 401 without a session', async () => {
    const anonymous = new ConsoleClient(t.base);
    for (const path of ['/console/api/session', '/console/api/keys', '/console/api/security-log']) {
      expect((await anonymous.get(path)).body).toEqual(SIGN_IN_REQUIRED);
    }
    for (const path of ['/console/api/keys', `/console/api/keys/${t.stack.operator ? '00000000-0000-7000-8000-000000000000' : ''}/roll`, '/console/api/keys/00000000-0000-7000-8000-000000000000/revoke']) {
      const result = await anonymous.post(path, { label: 'x', grace: 'now' });
      expect(result.status).toBe(401);
      expect(result.body).toEqual(SIGN_IN_REQUIRED);
    }
  });
});
