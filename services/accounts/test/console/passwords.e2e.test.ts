import { describe, expect, it } from 'vitest';
import { inviteOwner, resetOwnerPassword } from '../../src/index.ts';
import { SET_PASSWORD_LINK_TTL_MS } from '../../src/console/domain.ts';
import { accountWithOwner, baseOf, ConsoleClient, consoleOperator, tokenOf } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';

/** The console's passwords: the set-password link (one-time, checked before use, expiring, voided by a newer one), the stored hash, and passwords refused over plain HTTP in production. */

const LINK_INVALID = { detail: 'This link is invalid or has expired' };

const t = useConsoleStack();

describe('passwords and the set-password link', () => {
  it('stores an argon2id hash (memory-hard, OWASP parameters), never the password', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Hashing');
    const row = (await t.db.query('select password_hash from accounts.owners where id = $1', [owner.ownerId])).rows[0];
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(row.password_hash).not.toContain(owner.password);
  });

  it('set-password signs in; the link is one-time, and a password under 12 characters is refused without using it up', async () => {
    const account = await t.stack.createAccountWithKey('Link');
    const invited = await inviteOwner(consoleOperator(t.stack), { accountId: account.accountId, email: 'Link.Owner@Example.com' });
    expect(invited.setPasswordUrl).toMatch(new RegExp(`^${t.base}/set-password#token=[A-Za-z0-9_-]{43}$`));
    const token = tokenOf(invited.setPasswordUrl);
    const client = new ConsoleClient(t.base);

    const short = await client.post('/console/api/set-password', { token, password: 'elevenchars' });
    expect(short.status).toBe(400);
    expect(short.body).toEqual({ detail: expect.any(String), field: 'password' });
    const long = await client.post('/console/api/set-password', { token, password: 'x'.repeat(257) });
    expect(long.status).toBe(400);
    expect(long.body.field).toBe('password');

    const set = await client.post('/console/api/set-password', { token, password: 'twelve chars' });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({
      owner: { id: invited.ownerId, email: 'link.owner@example.com' },
      account: { id: account.accountId, name: 'Link', apiAccessEnabled: true },
    });
    expect((await client.get('/console/api/session')).body).toEqual(set.body);

    const again = await new ConsoleClient(t.base).post('/console/api/set-password', { token, password: 'another good password' });
    expect(again.status).toBe(400);
    expect(again.body).toEqual(LINK_INVALID);
    for (const bad of ['', 'not-a-token', 'x'.repeat(43), undefined]) {
      const result = await new ConsoleClient(t.base).post('/console/api/set-password', { token: bad, password: 'another good password' });
      expect(result.status).toBe(400);
      expect(result.body).toEqual(LINK_INVALID);
    }
  });

  it('a link can be checked before a password is chosen: usable, then used or expired, and checking never uses it', async () => {
    const account = await t.stack.createAccountWithKey('Checked link');
    const invited = await inviteOwner(consoleOperator(t.stack, t.clock), { accountId: account.accountId, email: `checked-link.${Date.now()}@example.com` });
    const token = tokenOf(invited.setPasswordUrl);
    const check = (at: string) => new ConsoleClient(at).post('/console/api/set-password/check', { token });
    expect((await check(t.base)).status).toBe(204);
    expect((await check(t.base)).status).toBe(204);
    t.offsetMs = SET_PASSWORD_LINK_TTL_MS + 1_000;
    try {
      const late = await check(t.clockedBase);
      expect({ status: late.status, body: late.body }).toEqual({ status: 400, body: LINK_INVALID });
    } finally {
      t.offsetMs = 0;
    }
    expect((await new ConsoleClient(t.base).post('/console/api/set-password', { token, password: 'a good long password' })).status).toBe(200);
    const used = await check(t.base);
    expect({ status: used.status, body: used.body }).toEqual({ status: 400, body: LINK_INVALID });
    for (const bad of ['', 'not-a-token', undefined]) {
      const result = await new ConsoleClient(t.base).post('/console/api/set-password/check', { token: bad });
      expect({ status: result.status, body: result.body }).toEqual({ status: 400, body: LINK_INVALID });
    }
  });

  it('a link is refused after 24 hours; a newer link voids an older one', async () => {
    const account = await t.stack.createAccountWithKey('Old link');
    const invited = await inviteOwner(consoleOperator(t.stack, t.clock), { accountId: account.accountId, email: `old-link.${Date.now()}@example.com` });
    t.offsetMs = SET_PASSWORD_LINK_TTL_MS + 1_000;
    try {
      const late = await new ConsoleClient(t.clockedBase).post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password: 'a good long password' });
      expect(late.body).toEqual(LINK_INVALID);
    } finally {
      t.offsetMs = 0;
    }
    const newer = await resetOwnerPassword(consoleOperator(t.stack), { ownerId: invited.ownerId });
    const older = await new ConsoleClient(t.base).post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password: 'a good long password' });
    expect(older.body).toEqual(LINK_INVALID);
    expect((await new ConsoleClient(t.base).post('/console/api/set-password', { token: tokenOf(newer.setPasswordUrl), password: 'a good long password' })).status).toBe(200);
  });
});

describe('a sign-in that a reset overtakes', () => {
  it('gets no session when the password it checked was cleared before its session began: a reset signs the owner out everywhere', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Reset during sign-in');
    // What `owner reset-password` does, held open: the sign-in reads the password still committed, checks
    // it, and only then would begin its session.
    await t.db.query('begin');
    try {
      await t.db.query('update accounts.owners set password_hash = null, password_set_at = null where id = $1', [owner.ownerId]);
      await t.db.query('delete from accounts.sessions where owner_id = $1', [owner.ownerId]);
      const attacker = new ConsoleClient(t.base);
      const signingIn = attacker.post('/console/api/sign-in', { email: owner.email, password: owner.password });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await t.db.query('commit');
      const signedIn = await signingIn;
      expect(signedIn.status).toBe(401);
      expect((await attacker.get('/console/api/session')).status).toBe(401);
    } catch (error) {
      await t.db.query('rollback').catch(() => undefined);
      throw error;
    }
    const sessions = await t.db.query('select count(*)::int as n from accounts.sessions where owner_id = $1', [owner.ownerId]);
    expect(sessions.rows[0].n).toBe(0);
    // The owner's log shows the attempt with the old password.
    const failed = await t.db.query(`select count(*)::int as n from accounts.security_events where owner_id = $1 and type = 'sign_in.failed'`, [owner.ownerId]);
    expect(failed.rows[0].n).toBe(1);
  });
});

describe('passwords over plain HTTP in production', () => {
  it('are refused as API keys are, before they are checked: no session, no failed sign-in, the link still unused', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Plain HTTP');
    const securityLog = async () => (await t.db.query('select type from accounts.security_events where account_id = $1 order by seq', [owner.accountId])).rows;
    const logged = await securityLog();
    const gateway = await t.stack.anotherGateway({ config: { production: true } });
    try {
      const client = new ConsoleClient(baseOf(gateway.url), { 'sec-fetch-site': 'same-origin' });
      const refused = { status: 400, body: { detail: 'Passwords are accepted over HTTPS only' } };
      const signIn = await client.request('POST', '/console/api/sign-in', { email: owner.email, password: owner.password }, { origin: '' });
      expect({ status: signIn.status, body: signIn.body }).toEqual(refused);
      expect(signIn.setCookie).toBeNull();
      const wrong = await client.request('POST', '/console/api/sign-in', { email: owner.email, password: 'not the password' }, { origin: '' });
      expect({ status: wrong.status, body: wrong.body }).toEqual(refused);
      expect(await securityLog()).toEqual(logged);
      const reset = await resetOwnerPassword(consoleOperator(t.stack), { ownerId: owner.ownerId });
      const setPassword = await client.request('POST', '/console/api/set-password', { token: tokenOf(reset.setPasswordUrl), password: 'a new long password' }, { origin: '' });
      expect({ status: setPassword.status, body: setPassword.body }).toEqual(refused);
      // The link was not spent: it still sets the password where passwords are accepted (the non-production gateway).
      const overHttps = new ConsoleClient(t.base);
      expect((await overHttps.post('/console/api/set-password', { token: tokenOf(reset.setPasswordUrl), password: 'a new long password' })).status).toBe(200);
      // A key over plain HTTP is refused the same way.
      const keyed = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': owner.apiKey }, body: JSON.stringify({ query: '{ viewer { account { id } } }' }) });
      expect(keyed.status).toBe(400);
    } finally {
      await gateway.close();
    }
  });
});
