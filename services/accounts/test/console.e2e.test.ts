import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACTED_PATHS } from '@ots/shared/logger';
import { createLogger } from '@ots/shared/logger';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { startGateway } from '@ots/gateway/server';
import { createKey, revokeKey } from '../src/index.ts';
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS, SET_PASSWORD_LINK_TTL_MS, SIGN_IN_WINDOW_MS } from '../src/console/domain.ts';
import { inviteOwner, resetOwnerPassword } from '../src/index.ts';
import { accountWithOwner, baseOf, ConsoleClient, consoleDeps, tokenOf } from './console-client.ts';

const SIGN_IN_FAILED = { detail: 'Email or password is incorrect' };
const SIGN_IN_REQUIRED = { detail: 'Sign in required' };
const NOT_FOUND = { detail: 'Not found' };
const CROSS_ORIGIN = { detail: 'Cross-origin request refused' };
const LINK_INVALID = { detail: 'This link is invalid or has expired' };
const VIEWER = '{ viewer { account { id } apiKey { id } } }';

let stack: TestStack;
let base: string;
let db: pg.Client;

/** A second gateway on the same database whose console clock the test moves, behind a trusted "proxy" (loopback) so tests choose client addresses. */
let clocked: RunningServer;
let clockedBase: string;
let offsetMs = 0;
const clock = () => Date.now() + offsetMs;

beforeAll(async () => {
  stack = await startStack({ env: { FAILED_AUTH_BURST: '10000' } });
  base = baseOf(stack.gatewayUrl);
  db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  clocked = await startGateway({
    config: { ...stack.config, trustProxy: ['loopback'] },
    keyStore: stack.running.keys.keyStore,
    logger: createLogger('clocked', 'silent'),
    port: 0,
    isReady: async () => true,
    consoleClock: clock,
  });
  clockedBase = baseOf(clocked.url);
});

afterAll(async () => {
  await clocked?.close();
  await db?.end();
  await stack?.close();
});

async function cookieSessionCount(ownerId: string): Promise<number> {
  return Number((await db.query('select count(*) from accounts.sessions where owner_id = $1', [ownerId])).rows[0].count);
}

describe('passwords and the set-password link', () => {
  it('stores an argon2id hash (memory-hard, OWASP parameters), never the password', async () => {
    const owner = await accountWithOwner(stack, base, 'Hashing');
    const row = (await db.query('select password_hash from accounts.owners where id = $1', [owner.ownerId])).rows[0];
    expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(row.password_hash).not.toContain(owner.password);
  });

  it('set-password signs in; the link is one-time, and a password under 12 characters is refused without using it up', async () => {
    const account = await stack.createAccountWithKey('Link');
    const invited = await inviteOwner(consoleDeps(stack), account.accountId, 'Link.Owner@Example.com');
    expect(invited.setPasswordUrl).toMatch(new RegExp(`^${base}/set-password#token=[A-Za-z0-9_-]{43}$`));
    const token = tokenOf(invited.setPasswordUrl);
    const client = new ConsoleClient(base);

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

    const again = await new ConsoleClient(base).post('/console/api/set-password', { token, password: 'another good password' });
    expect(again.status).toBe(400);
    expect(again.body).toEqual(LINK_INVALID);
    for (const bad of ['', 'not-a-token', 'x'.repeat(43), undefined]) {
      const result = await new ConsoleClient(base).post('/console/api/set-password', { token: bad, password: 'another good password' });
      expect(result.status).toBe(400);
      expect(result.body).toEqual(LINK_INVALID);
    }
  });

  it('a link can be checked before a password is chosen: usable, then used or expired, and checking never uses it', async () => {
    const account = await stack.createAccountWithKey('Checked link');
    const invited = await inviteOwner(consoleDeps(stack, clock), account.accountId, `checked-link.${Date.now()}@example.com`);
    const token = tokenOf(invited.setPasswordUrl);
    const check = (at: string) => new ConsoleClient(at).post('/console/api/set-password/check', { token });
    expect((await check(base)).status).toBe(204);
    expect((await check(base)).status).toBe(204);
    offsetMs = SET_PASSWORD_LINK_TTL_MS + 1_000;
    try {
      const late = await check(clockedBase);
      expect({ status: late.status, body: late.body }).toEqual({ status: 400, body: LINK_INVALID });
    } finally {
      offsetMs = 0;
    }
    expect((await new ConsoleClient(base).post('/console/api/set-password', { token, password: 'a good long password' })).status).toBe(200);
    const used = await check(base);
    expect({ status: used.status, body: used.body }).toEqual({ status: 400, body: LINK_INVALID });
    for (const bad of ['', 'not-a-token', undefined]) {
      const result = await new ConsoleClient(base).post('/console/api/set-password/check', { token: bad });
      expect({ status: result.status, body: result.body }).toEqual({ status: 400, body: LINK_INVALID });
    }
  });

  it('a link is refused after 24 hours; a newer link voids an older one', async () => {
    const account = await stack.createAccountWithKey('Old link');
    const invited = await inviteOwner(consoleDeps(stack, clock), account.accountId, `old-link.${Date.now()}@example.com`);
    offsetMs = SET_PASSWORD_LINK_TTL_MS + 1_000;
    try {
      const late = await new ConsoleClient(clockedBase).post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password: 'a good long password' });
      expect(late.body).toEqual(LINK_INVALID);
    } finally {
      offsetMs = 0;
    }
    const newer = await resetOwnerPassword(consoleDeps(stack), invited.ownerId);
    const older = await new ConsoleClient(base).post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password: 'a good long password' });
    expect(older.body).toEqual(LINK_INVALID);
    expect((await new ConsoleClient(base).post('/console/api/set-password', { token: tokenOf(newer.setPasswordUrl), password: 'a good long password' })).status).toBe(200);
  });
});

describe('the session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/, not Secure outside production; an opaque id stored only hashed', async () => {
    const owner = await accountWithOwner(stack, base, 'Cookie');
    const client = new ConsoleClient(base);
    const signIn = await client.post('/console/api/sign-in', { email: owner.email, password: owner.password });
    expect(signIn.status).toBe(200);
    const attributes = signIn.setCookie!.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes[0]).toMatch(/^ots_session=[a-z0-9_-]{43}$/);
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=strict', 'path=/']));
    expect(attributes).not.toContain('secure');
    const rows = (await db.query('select token_hash::text as hash from accounts.sessions where owner_id = $1', [owner.ownerId])).rows;
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.hash).not.toContain(client.session);
  });

  it('is Secure in production', async () => {
    const owner = await accountWithOwner(stack, base, 'Production cookie');
    const gateway = await startGateway({
      config: { ...stack.config, production: true, trustProxy: ['loopback'] },
      keyStore: stack.running.keys.keyStore,
      logger: createLogger('production', 'silent'),
      port: 0,
      isReady: async () => true,
    });
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

describe('passwords over plain HTTP in production', () => {
  it('are refused as API keys are, before they are checked: no session, no failed sign-in, the link still unused', async () => {
    const owner = await accountWithOwner(stack, base, 'Plain HTTP');
    const securityLog = async () => (await db.query('select type from accounts.security_events where account_id = $1 order by seq', [owner.accountId])).rows;
    const logged = await securityLog();
    const gateway = await startGateway({
      config: { ...stack.config, production: true },
      keyStore: stack.running.keys.keyStore,
      logger: createLogger('production', 'silent'),
      port: 0,
      isReady: async () => true,
    });
    try {
      const client = new ConsoleClient(baseOf(gateway.url), { 'sec-fetch-site': 'same-origin' });
      const refused = { status: 400, body: { detail: 'Passwords are accepted over HTTPS only' } };
      const signIn = await client.request('POST', '/console/api/sign-in', { email: owner.email, password: owner.password }, { origin: '' });
      expect({ status: signIn.status, body: signIn.body }).toEqual(refused);
      expect(signIn.setCookie).toBeNull();
      const wrong = await client.request('POST', '/console/api/sign-in', { email: owner.email, password: 'not the password' }, { origin: '' });
      expect({ status: wrong.status, body: wrong.body }).toEqual(refused);
      expect(await securityLog()).toEqual(logged);
      const reset = await resetOwnerPassword(consoleDeps(stack), owner.ownerId);
      const setPassword = await client.request('POST', '/console/api/set-password', { token: tokenOf(reset.setPasswordUrl), password: 'a new long password' }, { origin: '' });
      expect({ status: setPassword.status, body: setPassword.body }).toEqual(refused);
      // The link was not spent: it still sets the password where passwords are accepted (the non-production gateway).
      const overHttps = new ConsoleClient(base);
      expect((await overHttps.post('/console/api/set-password', { token: tokenOf(reset.setPasswordUrl), password: 'a new long password' })).status).toBe(200);
      // A key over plain HTTP is refused the same way.
      const keyed = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': owner.apiKey }, body: JSON.stringify({ query: '{ viewer { account { id } } }' }) });
      expect(keyed.status).toBe(400);
    } finally {
      await gateway.close();
    }
  });
});

describe('session expiry', () => {
  it('ends after 30 minutes idle; each use restarts the idle clock', async () => {
    const owner = await accountWithOwner(stack, base, 'Idle');
    const client = new ConsoleClient(clockedBase);
    offsetMs = 0;
    expect((await client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    try {
      offsetMs = SESSION_IDLE_MS - 60_000;
      expect((await client.get('/console/api/session')).status).toBe(200);
      offsetMs += SESSION_IDLE_MS - 60_000;
      expect((await client.get('/console/api/keys')).status).toBe(200);
      offsetMs += SESSION_IDLE_MS;
      const expired = await client.get('/console/api/session');
      expect(expired.status).toBe(401);
      expect(expired.body).toEqual(SIGN_IN_REQUIRED);
    } finally {
      offsetMs = 0;
    }
    // Gone for good, not only while the clock is ahead.
    expect((await client.get('/console/api/session')).status).toBe(401);
  });

  it('ends 12 hours after sign-in however busy it is', async () => {
    const owner = await accountWithOwner(stack, base, 'Absolute');
    const client = new ConsoleClient(clockedBase);
    offsetMs = 0;
    expect((await client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    try {
      const step = 25 * 60_000;
      while (offsetMs + step < SESSION_ABSOLUTE_MS - 60_000) {
        offsetMs += step;
        expect((await client.get('/console/api/session')).status).toBe(200);
      }
      offsetMs = SESSION_ABSOLUTE_MS - 60_000;
      expect((await client.get('/console/api/session')).status).toBe(200);
      offsetMs = SESSION_ABSOLUTE_MS + 1_000;
      expect((await client.get('/console/api/session')).body).toEqual(SIGN_IN_REQUIRED);
    } finally {
      offsetMs = 0;
    }
  });

  it('sign-out ends the session on the server, and clears the cookie', async () => {
    const owner = await accountWithOwner(stack, base, 'Sign out');
    const kept = owner.client.session!;
    const out = await owner.client.post('/console/api/sign-out', {});
    expect(out.status).toBe(204);
    expect(out.setCookie).toMatch(/^ots_session=;/);
    const replay = new ConsoleClient(base);
    replay.session = kept;
    expect((await replay.get('/console/api/session')).body).toEqual(SIGN_IN_REQUIRED);
    expect((await replay.get('/console/api/keys')).status).toBe(401);
    expect(await cookieSessionCount(owner.ownerId)).toBe(0);
  });

  it("a password reset ends every session of the owner; the old password stops working and the new one works", async () => {
    const owner = await accountWithOwner(stack, base, 'Reset');
    const second = new ConsoleClient(base);
    expect((await second.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    const link = await resetOwnerPassword(consoleDeps(stack), owner.ownerId);
    expect((await owner.client.get('/console/api/session')).status).toBe(401);
    expect((await second.get('/console/api/session')).status).toBe(401);
    expect((await new ConsoleClient(base).post('/console/api/sign-in', { email: owner.email, password: owner.password })).body).toEqual(SIGN_IN_FAILED);

    const third = new ConsoleClient(base);
    expect((await third.post('/console/api/set-password', { token: tokenOf(link.setPasswordUrl), password: 'a brand new password' })).status).toBe(200);
    expect((await third.get('/console/api/session')).status).toBe(200);
    expect((await second.get('/console/api/session')).status).toBe(401);
    expect((await new ConsoleClient(base).post('/console/api/sign-in', { email: owner.email, password: 'a brand new password' })).status).toBe(200);
  });

  it('setting a password through a link ends every session the owner still had', async () => {
    const owner = await accountWithOwner(stack, base, 'Set ends');
    const link = await resetOwnerPassword(consoleDeps(stack), owner.ownerId);
    // A session that outlived the reset (say, one started by a gateway that had not yet seen it): set-password must end it too.
    await db.query(
      "insert into accounts.sessions (id, account_id, owner_id, token_hash, created_at, last_seen_at) values (gen_random_uuid(), $1, $2, sha256('left over'), now(), now())",
      [owner.accountId, owner.ownerId],
    );
    const other = await accountWithOwner(stack, base, 'Set ends neighbour');
    const fresh = new ConsoleClient(base);
    expect((await fresh.post('/console/api/set-password', { token: tokenOf(link.setPasswordUrl), password: 'second password here' })).status).toBe(200);
    expect((await db.query("select count(*) from accounts.sessions where token_hash = sha256('left over')")).rows[0].count).toBe('0');
    expect(await cookieSessionCount(owner.ownerId)).toBe(1);
    expect((await fresh.get('/console/api/session')).status).toBe(200);
    // Another owner keeps theirs.
    expect((await other.client.get('/console/api/session')).status).toBe(200);
  });
});

describe('sign-in', () => {
  it('answers one message for every failure: unknown email, wrong password, no password yet, empty fields', async () => {
    const owner = await accountWithOwner(stack, base, 'One message');
    const pending = await inviteOwner(consoleDeps(stack), owner.accountId, `pending.${Date.now()}@example.com`);
    const pendingEmail = (await db.query('select email from accounts.owners where id = $1', [pending.ownerId])).rows[0].email;
    const attempts = [
      { email: 'nobody@example.com', password: owner.password },
      { email: owner.email, password: 'wrong password!!' },
      { email: owner.email, password: `${owner.password} ` },
      { email: pendingEmail, password: '' },
      { email: pendingEmail, password: 'anything at all' },
      { email: '', password: '' },
      {},
      { email: 42, password: ['x'] },
    ];
    for (const attempt of attempts) {
      const client = new ConsoleClient(base);
      const result = await client.post('/console/api/sign-in', attempt);
      expect(result.status, JSON.stringify(attempt)).toBe(401);
      expect(result.body).toEqual(SIGN_IN_FAILED);
      expect(result.setCookie).toBeNull();
    }
    const ok = await new ConsoleClient(base).post('/console/api/sign-in', { email: ` ${owner.email.toUpperCase()} `, password: owner.password });
    expect(ok.status).toBe(200);
    expect(ok.body.owner).toEqual({ id: owner.ownerId, email: owner.email });
  });

  it('refuses an email after 10 failures in 15 minutes, even with the right password, from any address; open again after the window', async () => {
    const owner = await accountWithOwner(stack, base, 'Email limit');
    offsetMs = 0;
    try {
      for (let i = 0; i < 10; i += 1) {
        const result = await new ConsoleClient(clockedBase, { 'x-forwarded-for': `198.51.100.${i + 1}` }).post('/console/api/sign-in', { email: owner.email, password: `wrong ${i} password` });
        expect(result.status).toBe(401);
      }
      const limited = await new ConsoleClient(clockedBase, { 'x-forwarded-for': '198.51.100.99' }).post('/console/api/sign-in', { email: owner.email, password: owner.password });
      expect(limited.status).toBe(429);
      expect(limited.body.detail).toEqual(expect.any(String));
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(SIGN_IN_WINDOW_MS / 1000 - 60);
      expect(retryAfter).toBeLessThanOrEqual(SIGN_IN_WINDOW_MS / 1000);
      // Another email from the same addresses is not held up.
      const other = await accountWithOwner(stack, base, 'Email limit neighbour');
      expect((await new ConsoleClient(clockedBase, { 'x-forwarded-for': '198.51.100.1' }).post('/console/api/sign-in', { email: other.email, password: other.password })).status).toBe(200);

      offsetMs = SIGN_IN_WINDOW_MS + 1_000;
      expect((await new ConsoleClient(clockedBase, { 'x-forwarded-for': '198.51.100.99' }).post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    } finally {
      offsetMs = 0;
    }
  });

  it('refuses an address after 30 failures in 15 minutes, whatever the email; other addresses are unaffected', async () => {
    const owner = await accountWithOwner(stack, base, 'Address limit');
    const attacker = { 'x-forwarded-for': '203.0.113.7' };
    for (let i = 0; i < 30; i += 1) {
      const result = await new ConsoleClient(clockedBase, attacker).post('/console/api/sign-in', { email: `guess${i}@example.com`, password: 'password guess' });
      expect(result.status).toBe(401);
    }
    const limited = await new ConsoleClient(clockedBase, attacker).post('/console/api/sign-in', { email: owner.email, password: owner.password });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await new ConsoleClient(clockedBase, { 'x-forwarded-for': '203.0.113.8' }).post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
  });

  it('parallel guesses cannot slip past the email limit', async () => {
    const owner = await accountWithOwner(stack, base, 'Parallel guesses');
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        new ConsoleClient(clockedBase, { 'x-forwarded-for': `192.0.2.${i + 1}` }).post('/console/api/sign-in', { email: owner.email, password: `parallel guess ${i}` }),
      ),
    );
    expect(results.filter((result) => result.status === 401).length).toBeLessThanOrEqual(10);
    expect(results.every((result) => [401, 429].includes(result.status))).toBe(true);
  });
});

describe('state-changing requests from another origin', () => {
  it('are refused with 403 on every POST endpoint, before anything changes', async () => {
    const owner = await accountWithOwner(stack, base, 'Cross origin');
    const { key } = await createKey(stack.management, owner.accountId, { name: 'target' });
    const invited = await inviteOwner(consoleDeps(stack), owner.accountId, `cross.${Date.now()}@example.com`);
    const before = (await db.query('select count(*) from accounts.security_events where account_id = $1', [owner.accountId])).rows[0].count;
    const posts: [string, unknown][] = [
      ['/console/api/sign-in', { email: owner.email, password: owner.password }],
      ['/console/api/sign-out', {}],
      ['/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password: 'attacker chosen password' }],
      ['/console/api/keys', { label: 'planted', expires: 'never' }],
      [`/console/api/keys/${key.id}/roll`, { grace: 'now' }],
      [`/console/api/keys/${key.id}/revoke`, {}],
    ];
    const foreign: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: base.replace('127.0.0.1', 'localhost') },
      { origin: '', 'sec-fetch-site': 'cross-site' },
      { origin: '', 'sec-fetch-site': 'same-site' },
      { origin: '' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' },
    ];
    for (const [path, body] of posts) {
      for (const headers of foreign) {
        const result = await owner.client.request('POST', path, body, headers);
        expect(result.status, `${path} ${JSON.stringify(headers)}`).toBe(403);
        expect(result.body).toEqual(CROSS_ORIGIN);
      }
    }
    expect((await db.query('select count(*) from accounts.security_events where account_id = $1', [owner.accountId])).rows[0].count).toBe(before);
    expect((await db.query('select revoked_at, expires_at from accounts.api_keys where id = $1', [key.id])).rows[0]).toEqual({ revoked_at: null, expires_at: null });
    expect((await owner.client.get('/console/api/session')).status).toBe(200);
    // The same requests from the console's own origin work: a browser without Origin but with Sec-Fetch-Site: same-origin too.
    expect((await owner.client.request('POST', '/console/api/keys', { label: 'mine' }, { origin: '', 'sec-fetch-site': 'same-origin' })).status).toBe(201);
  });
});

describe('pages and headers', () => {
  const PAGES = ['/', '/sign-in', '/set-password', '/settings/api-keys', '/settings/security-log', '/explorer'];

  it('every page and console answer carries a strict CSP, frame-ancestors none, no-store, nosniff and no-referrer', async () => {
    const client = new ConsoleClient(base);
    const responses = [...(await Promise.all(PAGES.map((page) => client.get(page)))), await client.get('/console/api/session'), await client.post('/console/api/sign-in', {})];
    for (const response of responses) {
      const csp = response.headers.get('content-security-policy')!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("default-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    }
    for (const page of responses.slice(0, PAGES.length)) {
      expect([200, 503]).toContain(page.status);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  it('/graphql is untouched by the console: no console headers, the same answers', async () => {
    const { apiKey } = await stack.createAccountWithKey('Untouched API');
    const result = await stack.graphql(apiKey, VIEWER);
    expect(result.status).toBe(200);
    expect(result.headers.get('content-security-policy')).toBeNull();
    expect(result.headers.get('set-cookie')).toBeNull();
    expect((await stack.graphql(undefined, VIEWER)).body.errors[0].message).toBe('Authentication required');
  });

  it('unknown console API paths are a JSON 404', async () => {
    const result = await new ConsoleClient(base).get('/console/api/nothing-here');
    expect(result.status).toBe(404);
    expect(result.body).toEqual(NOT_FOUND);
  });
});

describe('API keys in the console', () => {
  it('creates (shown once), lists newest first with status, rolls with a grace and revokes; each through the CLI module into the log', async () => {
    const owner = await accountWithOwner(stack, base, 'Keys');
    const created = await owner.client.post('/console/api/keys', { label: 'trading bot', expires: '30d' });
    expect(created.status).toBe(201);
    expect(created.body.apiKey).toMatch(/^svc_live_[0-9A-Za-z]{38}$/);
    expect(created.body.key).toMatchObject({ label: 'trading bot', environment: 'LIVE', status: 'Active', revokedAt: null, lastUsedAt: null });
    expect(Date.parse(created.body.key.expiresAt) - Date.now()).toBeGreaterThan(30 * 86_400_000 - 120_000);
    const viewer = await stack.graphql(created.body.apiKey, VIEWER);
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
    expect(rolled.body.key).toMatchObject({ label: 'trading bot', status: 'Active', expiresAt: null });
    expect((await stack.graphql(created.body.apiKey, VIEWER)).status).toBe(200);
    expect((await stack.graphql(rolled.body.apiKey, VIEWER)).status).toBe(200);

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
    const owner = await accountWithOwner(stack, base, 'Bad input');
    const { key } = await createKey(stack.management, owner.accountId, { name: 'k' });
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
    expect(Number((await db.query('select count(*) from accounts.api_keys where account_id = $1', [owner.accountId])).rows[0].count)).toBe(3);
  });

  it('a key revoked in the console gets 401 on /graphql within 1 s', async () => {
    const owner = await accountWithOwner(stack, base, 'Revoke within 1 s');
    const created = await owner.client.post('/console/api/keys', { label: 'soon revoked' });
    expect((await stack.graphql(created.body.apiKey, VIEWER)).status).toBe(200);
    const revoked = await owner.client.post(`/console/api/keys/${created.body.key.id}/revoke`, {});
    const revokedAt = Date.parse(revoked.body.key.revokedAt);
    let status = 0;
    while (Date.now() < revokedAt + 3_000) {
      const sentAt = Date.now();
      status = (await stack.graphql(created.body.apiKey, VIEWER)).status;
      if (sentAt > revokedAt + 1_000) expect(status).toBe(401);
      if (status === 401) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(401);
  });
});

describe("an owner of account A and account B's keys and log", () => {
  it('sees and touches nothing of B through any console endpoint', async () => {
    const a = await accountWithOwner(stack, base, 'Account A');
    const b = await accountWithOwner(stack, base, 'Account B');
    const bKey = await b.client.post('/console/api/keys', { label: 'B only' });
    for (let i = 0; i < 55; i += 1) await createKey(stack.management, b.accountId, { name: `b${i}` });
    const bLog = await b.client.get('/console/api/security-log');
    expect(bLog.body.nextCursor).toEqual(expect.any(String));
    const bState = async () => JSON.stringify((await db.query('select * from accounts.api_keys where account_id = $1 order by id', [b.accountId])).rows);
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
    const withBCursor = await a.client.get(`/console/api/security-log?after=${encodeURIComponent(bLog.body.nextCursor)}`);
    for (const log of [aLog, withBCursor]) {
      expect(log.status).toBe(200);
      const text = JSON.stringify(log.body);
      expect(text).not.toContain(b.email);
      expect(text).not.toContain(bKey.body.key.displayPrefix);
    }
    // Creating acts on A's account alone.
    const made = await a.client.post('/console/api/keys', { label: 'A new' });
    expect((await stack.graphql(made.body.apiKey, VIEWER)).body.data.viewer.account.id).toBe(a.accountId);
    await a.client.post('/console/api/sign-out', {});

    expect(await bState()).toBe(before);
    expect((await stack.graphql(bKey.body.apiKey, VIEWER)).status).toBe(200);
    expect((await b.client.get('/console/api/session')).status).toBe(200);
  });

  it("pages B's own log newest first, 50 a page, none skipped or repeated", async () => {
    const b = await accountWithOwner(stack, base, 'Paged log');
    for (let i = 0; i < 60; i += 1) await createKey(stack.management, b.accountId, { name: `p${i}` });
    const first = await b.client.get('/console/api/security-log');
    expect(first.body.events).toHaveLength(50);
    const second = await b.client.get(`/console/api/security-log?after=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body.nextCursor).toBeNull();
    const all = [...first.body.events, ...second.body.events];
    const total = Number((await db.query('select count(*) from accounts.security_events where account_id = $1', [b.accountId])).rows[0].count);
    expect(all).toHaveLength(total);
    expect(new Set(all.map((event) => event.id)).size).toBe(total);
    const times = all.map((event) => Date.parse(event.occurredAt));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
    expect((await b.client.get('/console/api/security-log?after=garbage')).status).toBe(400);
  });

  it('every signed-in endpoint answers 401 without a session', async () => {
    const anonymous = new ConsoleClient(base);
    for (const path of ['/console/api/session', '/console/api/keys', '/console/api/security-log']) {
      expect((await anonymous.get(path)).body).toEqual(SIGN_IN_REQUIRED);
    }
    for (const path of ['/console/api/keys', `/console/api/keys/${stack.management ? '00000000-0000-7000-8000-000000000000' : ''}/roll`, '/console/api/keys/00000000-0000-7000-8000-000000000000/revoke']) {
      const result = await anonymous.post(path, { label: 'x', grace: 'now' });
      expect(result.status).toBe(401);
      expect(result.body).toEqual(SIGN_IN_REQUIRED);
    }
  });
});

describe('secrets', () => {
  it('no password, session id, set-password token or full key reaches the database or the log, even at trace level', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = pino({ level: 'trace', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink);
    const gateway = await startGateway({ config: stack.config, keyStore: stack.running.keys.keyStore, logger, port: 0, isReady: async () => true });
    const secrets: string[] = [];
    try {
      const here = baseOf(gateway.url);
      const account = await stack.createAccountWithKey('Secrets');
      const invited = await inviteOwner(consoleDeps(stack), account.accountId, `secrets.${Date.now()}@example.com`);
      const password = 'Sup3r secret passphrase';
      const client = new ConsoleClient(here);
      secrets.push(tokenOf(invited.setPasswordUrl), password);
      expect((await client.post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password })).status).toBe(200);
      secrets.push(client.session!);
      const email = invited.ownerId && (await client.get('/console/api/session')).body.owner.email;
      expect((await new ConsoleClient(here).post('/console/api/sign-in', { email, password: 'Wrong secret passphrase' })).status).toBe(401);
      secrets.push('Wrong secret passphrase');
      const second = new ConsoleClient(here);
      expect((await second.post('/console/api/sign-in', { email, password })).status).toBe(200);
      secrets.push(second.session!);
      const created = await client.post('/console/api/keys', { label: 'secret key' });
      const rolled = await client.post(`/console/api/keys/${created.body.key.id}/roll`, { grace: '1h' });
      secrets.push(created.body.apiKey, rolled.body.apiKey);
      await client.post(`/console/api/keys/${rolled.body.key.id}/revoke`, {});
      await client.get('/console/api/keys');
      await client.get('/console/api/security-log');
      await second.post('/console/api/sign-out', {});
      await client.post('/console/api/set-password', { token: 'bogus', password: 'short' });
    } finally {
      await gateway.close();
    }

    const tables = (await db.query("select table_name from information_schema.tables where table_schema = 'accounts'")).rows.map((row) => row.table_name);
    expect(tables).toEqual(expect.arrayContaining(['owners', 'sessions', 'set_password_tokens', 'security_events', 'sign_in_failures', 'api_keys']));
    let dump = '';
    for (const table of tables) {
      const rows = await db.query(`select row_to_json(t)::text as row from accounts.${table} t`);
      dump += rows.rows.map((row) => row.row).join('\n');
    }
    const log = lines.join('');
    expect(log.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      // A key's random part, a password, a token or session id: any 12 characters of it would be a leak.
      const probe = secret.startsWith('svc_live_') ? secret.slice(9, 21) : secret.slice(0, 12);
      expect(dump).not.toContain(probe);
      expect(log).not.toContain(probe);
      expect(dump).not.toContain(Buffer.from(secret).toString('hex').slice(0, 24));
    }
  });
});

describe('keys revoked elsewhere', () => {
  it('a key the CLI module revokes shows as Revoked in the console, logged without an owner', async () => {
    const owner = await accountWithOwner(stack, base, 'CLI revoke');
    await revokeKey(stack.management, owner.apiKeyId);
    const keys = await owner.client.get('/console/api/keys');
    expect(keys.body.keys[0]).toMatchObject({ id: owner.apiKeyId, status: 'Revoked' });
    const log = await owner.client.get('/console/api/security-log');
    expect(log.body.events[0]).toMatchObject({ type: 'key.revoked', ownerEmail: null });
  });
});
