import { describe, expect, it } from 'vitest';
import { inviteOwner, resetOwnerPassword } from '../../src/index.ts';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from '../../src/console/domain.ts';
import { accountWithOwner, baseOf, ConsoleClient, consoleOperator, SIGN_IN_FAILED, SIGN_IN_REQUIRED, tokenOf } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';

/** The console's session: its cookie, and how it ends (idle, at its absolute limit, at sign-out, at a password reset or a new password). */

const t = useConsoleStack();

describe('the session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/, not Secure outside production; an opaque id stored only hashed', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Cookie');
    const client = new ConsoleClient(t.base);
    const signIn = await client.post('/console/api/sign-in', { email: owner.email, password: owner.password });
    expect(signIn.status).toBe(200);
    const attributes = signIn.setCookie!.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes[0]).toMatch(/^ots_session=[a-z0-9_-]{43}$/);
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/']));
    expect(attributes).not.toContain('secure');
    const rows = (await t.db.query('select token_hash::text as hash from accounts.sessions where owner_id = $1', [owner.ownerId])).rows;
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.hash).not.toContain(client.session);
  });

  it('is Secure in production', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Production cookie');
    const gateway = await t.stack.anotherGateway({ config: { production: true, trustProxy: ['loopback'] } });
    try {
      // The configured console address is another port here, so the browser's Sec-Fetch-Site vouches instead;
      // the TLS-terminating proxy in front says the request came over HTTPS.
      const client = new ConsoleClient(baseOf(gateway.url), { 'sec-fetch-site': 'same-origin', 'x-forwarded-proto': 'https' });
      const signIn = await client.request('POST', '/console/api/sign-in', { email: owner.email, password: owner.password }, { origin: '' });
      expect(signIn.status).toBe(200);
      expect(signIn.setCookie!.split(';').map((part) => part.trim().toLowerCase())).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=strict']));
    } finally {
      await gateway.close();
    }
  });
});

describe('session expiry', () => {
  it('ends after 30 minutes idle; each use restarts the idle clock', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Idle');
    const client = new ConsoleClient(t.clockedBase);
    t.offsetMs = 0;
    expect((await client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    try {
      t.offsetMs = SESSION_IDLE_MS - 60_000;
      expect((await client.get('/console/api/session')).status).toBe(200);
      t.offsetMs += SESSION_IDLE_MS - 60_000;
      expect((await client.get('/console/api/keys')).status).toBe(200);
      t.offsetMs += SESSION_IDLE_MS;
      const expired = await client.get('/console/api/session');
      expect(expired.status).toBe(401);
      expect(expired.body).toEqual(SIGN_IN_REQUIRED);
    } finally {
      t.offsetMs = 0;
    }
    // Gone for good, not only while the clock is ahead.
    expect((await client.get('/console/api/session')).status).toBe(401);
  });

  it('ends 12 hours after sign-in however busy it is', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Absolute');
    const client = new ConsoleClient(t.clockedBase);
    t.offsetMs = 0;
    expect((await client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    try {
      const step = 25 * 60_000;
      while (t.offsetMs + step < SESSION_ABSOLUTE_MS - 60_000) {
        t.offsetMs += step;
        expect((await client.get('/console/api/session')).status).toBe(200);
      }
      t.offsetMs = SESSION_ABSOLUTE_MS - 60_000;
      expect((await client.get('/console/api/session')).status).toBe(200);
      t.offsetMs = SESSION_ABSOLUTE_MS + 1_000;
      expect((await client.get('/console/api/session')).body).toEqual(SIGN_IN_REQUIRED);
    } finally {
      t.offsetMs = 0;
    }
  });

  it('sign-out ends the session on the server, and clears the cookie', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Sign out');
    const kept = owner.client.session!;
    const out = await owner.client.post('/console/api/sign-out', {});
    expect(out.status).toBe(204);
    expect(out.setCookie).toMatch(/^ots_session=;/);
    const replay = new ConsoleClient(t.base);
    replay.session = kept;
    expect((await replay.get('/console/api/session')).body).toEqual(SIGN_IN_REQUIRED);
    expect((await replay.get('/console/api/keys')).status).toBe(401);
    expect(await t.cookieSessionCount(owner.ownerId)).toBe(0);
  });

  it("signing in from a browser that still holds a session ends that session, the same owner's or another's; a failed attempt ends nothing", async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Signs in again');
    const before = owner.client.session!;
    expect((await owner.client.post('/console/api/sign-in', { email: owner.email, password: 'not the password' })).status).toBe(401);
    expect((await owner.client.get('/console/api/session')).status).toBe(200);

    expect((await owner.client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    expect(owner.client.session).not.toBe(before);
    const replay = new ConsoleClient(t.base);
    replay.session = before;
    expect((await replay.get('/console/api/session')).body).toEqual(SIGN_IN_REQUIRED);
    expect(await t.cookieSessionCount(owner.ownerId)).toBe(1);

    // The same browser signs in as an owner of another account: the first owner's session ends with the cookie it replaces.
    const other = await accountWithOwner(t.stack, t.base, 'Signs in as another');
    const first = owner.client.session!;
    expect((await owner.client.post('/console/api/sign-in', { email: other.email, password: other.password })).body.owner.id).toBe(other.ownerId);
    replay.session = first;
    expect((await replay.get('/console/api/session')).status).toBe(401);
    expect(await t.cookieSessionCount(owner.ownerId)).toBe(0);
  });

  it("setting a password through a link from a browser signed in as another owner ends that owner's session", async () => {
    const signedIn = await accountWithOwner(t.stack, t.base, 'Signed in elsewhere');
    const held = signedIn.client.session!;
    const account = await t.stack.createAccountWithKey('Invited next');
    const invited = await inviteOwner(consoleOperator(t.stack), { accountId: account.accountId, email: `invited.${Date.now()}@example.com` });
    const set = await signedIn.client.post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password: 'the invited password' });
    expect(set.body.owner.id).toBe(invited.ownerId);
    const replay = new ConsoleClient(t.base);
    replay.session = held;
    expect((await replay.get('/console/api/session')).status).toBe(401);
    expect(await t.cookieSessionCount(signedIn.ownerId)).toBe(0);
  });

  it("a password reset ends every session of the owner; the old password stops working and the new one works", async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Reset');
    const second = new ConsoleClient(t.base);
    expect((await second.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    const link = await resetOwnerPassword(consoleOperator(t.stack), { ownerId: owner.ownerId });
    expect((await owner.client.get('/console/api/session')).status).toBe(401);
    expect((await second.get('/console/api/session')).status).toBe(401);
    expect((await new ConsoleClient(t.base).post('/console/api/sign-in', { email: owner.email, password: owner.password })).body).toEqual(SIGN_IN_FAILED);

    const third = new ConsoleClient(t.base);
    expect((await third.post('/console/api/set-password', { token: tokenOf(link.setPasswordUrl), password: 'a brand new password' })).status).toBe(200);
    expect((await third.get('/console/api/session')).status).toBe(200);
    expect((await second.get('/console/api/session')).status).toBe(401);
    expect((await new ConsoleClient(t.base).post('/console/api/sign-in', { email: owner.email, password: 'a brand new password' })).status).toBe(200);
  });

  it('setting a password through a link ends every session the owner still had', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Set ends');
    const link = await resetOwnerPassword(consoleOperator(t.stack), { ownerId: owner.ownerId });
    // A session that outlived the reset (say, one started by a gateway that had not yet seen it): set-password must end it too.
    await t.db.query(
      "insert into accounts.sessions (id, account_id, owner_id, token_hash, created_at, last_seen_at) values (gen_random_uuid(), $1, $2, sha256('left over'), now(), now())",
      [owner.accountId, owner.ownerId],
    );
    const other = await accountWithOwner(t.stack, t.base, 'Set ends neighbour');
    const fresh = new ConsoleClient(t.base);
    expect((await fresh.post('/console/api/set-password', { token: tokenOf(link.setPasswordUrl), password: 'second password here' })).status).toBe(200);
    expect((await t.db.query("select count(*) from accounts.sessions where token_hash = sha256('left over')")).rows[0].count).toBe('0');
    expect(await t.cookieSessionCount(owner.ownerId)).toBe(1);
    expect((await fresh.get('/console/api/session')).status).toBe(200);
    // Another owner keeps theirs.
    expect((await other.client.get('/console/api/session')).status).toBe(200);
  });
});
