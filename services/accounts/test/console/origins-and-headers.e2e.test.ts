import { describe, expect, it } from 'vitest';
import { createKey, inviteOwner } from '../../src/index.ts';
import { accountWithOwner, ConsoleClient, consoleOperator, NOT_FOUND, tokenOf, VIEWER } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';

/** What the console refuses from another origin, and the headers of its pages and answers (and none on /graphql). */

const CROSS_ORIGIN = { detail: 'Cross-origin request refused' };

const t = useConsoleStack();

describe('state-changing requests from another origin', () => {
  it('are refused with 403 on every POST endpoint, before anything changes', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Cross origin');
    const { key } = await createKey(t.stack.operator, { accountId: owner.accountId, name: 'target' });
    const invited = await inviteOwner(consoleOperator(t.stack), { accountId: owner.accountId, email: `cross.${Date.now()}@example.com` });
    const before = (await t.db.query('select count(*) from accounts.security_events where account_id = $1', [owner.accountId])).rows[0].count;
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
      { origin: t.base.replace('127.0.0.1', 'localhost') },
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
    expect((await t.db.query('select count(*) from accounts.security_events where account_id = $1', [owner.accountId])).rows[0].count).toBe(before);
    expect((await t.db.query('select revoked_at, expires_at from accounts.api_keys where id = $1', [key.id])).rows[0]).toEqual({ revoked_at: null, expires_at: null });
    expect((await owner.client.get('/console/api/session')).status).toBe(200);
    // The same requests from the console's own origin work: a browser without Origin but with Sec-Fetch-Site: same-origin too.
    expect((await owner.client.request('POST', '/console/api/keys', { label: 'mine' }, { origin: '', 'sec-fetch-site': 'same-origin' })).status).toBe(201);
  });
});

describe('pages and headers', () => {
  const PAGES = ['/', '/sign-in', '/set-password', '/settings/api-keys', '/settings/security-log', '/explorer'];

  it('every page and console answer carries a strict CSP, frame-ancestors none, no-store, nosniff and no-referrer', async () => {
    const client = new ConsoleClient(t.base);
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
    const { apiKey } = await t.stack.createAccountWithKey('Untouched API');
    const result = await t.stack.graphql(apiKey, VIEWER);
    expect(result.status).toBe(200);
    expect(result.headers.get('content-security-policy')).toBeNull();
    expect(result.headers.get('set-cookie')).toBeNull();
    expect((await t.stack.graphql(undefined, VIEWER)).body.errors[0].message).toBe('Authentication required');
  });

  it('unknown console API paths are a JSON 404', async () => {
    const result = await new ConsoleClient(t.base).get('/console/api/nothing-here');
    expect(result.status).toBe(404);
    expect(result.body).toEqual(NOT_FOUND);
  });
});
