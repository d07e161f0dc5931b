import type { KyselyPlugin, OperationNode, RootOperationNode } from 'kysely';
import { describe, expect, it } from 'vitest';
import { inviteOwner } from '../../src/index.ts';
import { signIn } from '../../src/console/operations.ts';
import { SIGN_IN_WINDOW_MS } from '../../src/console/domain.ts';
import { accountWithOwner, ConsoleClient, consoleOperator, SIGN_IN_FAILED } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';
import { postWithRawHeaders } from '../../../../testing/requests.ts';

/** Signing in to the console: one message for every failure, and the limits per email and per client address. */

const t = useConsoleStack();

describe('sign-in', () => {
  it('answers one message for every failure: unknown email, wrong password, no password yet, empty fields', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'One message');
    const pending = await inviteOwner(consoleOperator(t.stack), { accountId: owner.accountId, email: `pending.${Date.now()}@example.com` });
    const pendingEmail = (await t.db.query('select email from accounts.owners where id = $1', [pending.ownerId])).rows[0].email;
    const attempts = [
      { email: 'nobody@example.com', password: owner.password },
      { email: owner.email, password: 'wrong password!!' },
      { email: owner.email, password: `${owner.password} ` },
      { email: pendingEmail, password: '' },
      { email: pendingEmail, password: 'anything at all' },
      { email: '', password: '' },
      {},
      { email: 42, password: ['x'] },
      // Text the database cannot hold, and text that is no address at all: still the one message.
      { email: `${owner.email}\u0000`, password: owner.password },
      { email: 'not an address', password: owner.password },
    ];
    for (const attempt of attempts) {
      const client = new ConsoleClient(t.base);
      const result = await client.post('/console/api/sign-in', attempt);
      expect(result.status, JSON.stringify(attempt)).toBe(401);
      expect(result.body).toEqual(SIGN_IN_FAILED);
      expect(result.setCookie).toBeNull();
    }
    const ok = await new ConsoleClient(t.base).post('/console/api/sign-in', { email: ` ${owner.email.toUpperCase()} `, password: owner.password });
    expect(ok.status).toBe(200);
    expect(ok.body.owner).toEqual({ id: owner.ownerId, email: owner.email });
  });

  it("answers a wrong password for an owner's email after the same database work as an unknown email: as many statements, as many writes", async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Same work');
    /** Each statement sent, as its kind and the kinds of what its WITH clause does: `InsertQueryNode(DeleteQueryNode,UpdateQueryNode)`. */
    const statementsOf = async (email: string) => {
      const sent: string[] = [];
      const recorder: KyselyPlugin = {
        transformQuery: ({ node }: { node: RootOperationNode }) => {
          const ctes = ((node as { with?: { expressions: { expression: OperationNode }[] } }).with?.expressions ?? []).map((cte) => cte.expression.kind);
          sent.push(`${node.kind}(${ctes.join(',')})`);
          return node;
        },
        transformResult: async ({ result }) => result,
      };
      const scope = consoleOperator(t.stack);
      const refused = signIn({ ...scope, db: scope.db.withPlugin(recorder) }, {
        body: { email, password: 'not the password' },
        origin: { clientAddress: '192.0.2.200', userAgent: null },
        previousToken: undefined,
      });
      await expect(refused).rejects.toMatchObject({ status: 401 });
      return sent;
    };
    const writes = (statements: string[]) => statements.filter((statement) => /Insert|Update|Delete/.test(statement)).length;
    const known = await statementsOf(owner.email);
    const unknown = await statementsOf(`nobody.${Date.now()}@example.com`);
    expect(known).toHaveLength(unknown.length);
    expect(writes(known)).toBe(writes(unknown));
    // The last statement writes in both: a statement that writes nothing commits without waiting for the WAL.
    expect(unknown.at(-1)).toMatch(/Update/);
    expect(known.at(-1)).toMatch(/Insert/);
    // The security log is as before: the owner's failure, with where it came from.
    const client = new ConsoleClient(t.base);
    expect((await client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    const failed = (await client.get('/console/api/security-log')).body.events.filter((event: { type: string }) => event.type === 'sign_in.failed');
    expect(failed).toEqual([expect.objectContaining({ ownerEmail: owner.email, clientAddress: '192.0.2.200', userAgent: null, keyDisplayPrefix: null, detail: null })]);
  });

  it("keeps a failure's user agent in the security log without control characters, C1 ones (CSI, OSC) included", async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Terminal escapes');
    const agent = 'Mozilla/5.0 \u009b2J\u009d0;retitled\u009c\u0085(X11)\u0080\u009f';
    const status = await postWithRawHeaders(`${t.base}/console/api/sign-in`, JSON.stringify({ email: owner.email, password: 'wrong password!!' }), {
      origin: t.base,
      'user-agent': agent,
    });
    expect(status).toBe(401);
    const client = new ConsoleClient(t.base);
    expect((await client.post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    const log = await client.get('/console/api/security-log');
    const failed = log.body.events.filter((event: { type: string }) => event.type === 'sign_in.failed');
    expect(failed.map((event: { userAgent: string }) => event.userAgent)).toEqual(['Mozilla/5.0 2J0;retitled(X11)']);
  });

  it('refuses an email after 10 failures in 15 minutes, even with the right password, from any address; open again after the window', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Email limit');
    t.offsetMs = 0;
    try {
      for (let i = 0; i < 10; i += 1) {
        const result = await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': `198.51.100.${i + 1}` }).post('/console/api/sign-in', { email: owner.email, password: `wrong ${i} password` });
        expect(result.status).toBe(401);
      }
      const limited = await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': '198.51.100.99' }).post('/console/api/sign-in', { email: owner.email, password: owner.password });
      expect(limited.status).toBe(429);
      expect(limited.body.detail).toEqual(expect.any(String));
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(SIGN_IN_WINDOW_MS / 1000 - 60);
      expect(retryAfter).toBeLessThanOrEqual(SIGN_IN_WINDOW_MS / 1000);
      // Another email from the same addresses is not held up.
      const other = await accountWithOwner(t.stack, t.base, 'Email limit neighbour');
      expect((await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': '198.51.100.1' }).post('/console/api/sign-in', { email: other.email, password: other.password })).status).toBe(200);

      t.offsetMs = SIGN_IN_WINDOW_MS + 1_000;
      expect((await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': '198.51.100.99' }).post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
    } finally {
      t.offsetMs = 0;
    }
  });

  it('refuses an address after 30 failures in 15 minutes, whatever the email; other addresses are unaffected', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Address limit');
    const attacker = { 'x-forwarded-for': '203.0.113.7' };
    for (let i = 0; i < 30; i += 1) {
      const result = await new ConsoleClient(t.clockedBase, attacker).post('/console/api/sign-in', { email: `guess${i}@example.com`, password: 'password guess' });
      expect(result.status).toBe(401);
    }
    const limited = await new ConsoleClient(t.clockedBase, attacker).post('/console/api/sign-in', { email: owner.email, password: owner.password });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': '203.0.113.8' }).post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
  });

  it("counts an IPv6 client's failures by its /64, as the gateway counts failed keys: each address of it gets no allowance of its own", async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'IPv6 address limit');
    for (let i = 0; i < 30; i += 1) {
      const result = await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': `2001:db8:7:7::${(i + 1).toString(16)}` }).post('/console/api/sign-in', {
        email: `v6guess${i}@example.com`,
        password: 'password guess',
      });
      expect(result.status).toBe(401);
    }
    const sameNetwork = await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': '2001:db8:7:7:ffff::1' }).post('/console/api/sign-in', { email: owner.email, password: owner.password });
    expect(sameNetwork.status).toBe(429);
    expect((await new ConsoleClient(t.clockedBase, { 'x-forwarded-for': '2001:db8:7:8::1' }).post('/console/api/sign-in', { email: owner.email, password: owner.password })).status).toBe(200);
  });

  it('parallel guesses cannot slip past the email limit', async () => {
    const owner = await accountWithOwner(t.stack, t.base, 'Parallel guesses');
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        new ConsoleClient(t.clockedBase, { 'x-forwarded-for': `192.0.2.${i + 1}` }).post('/console/api/sign-in', { email: owner.email, password: `parallel guess ${i}` }),
      ),
    );
    expect(results.filter((result) => result.status === 401).length).toBeLessThanOrEqual(10);
    expect(results.every((result) => [401, 429].includes(result.status))).toBe(true);
  });
});
