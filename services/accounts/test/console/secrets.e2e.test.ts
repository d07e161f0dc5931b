import { describe, expect, it } from 'vitest';
import { recordingLogger } from '@ots/shared/testing/recording-logger';
import { inviteOwner } from '../../src/index.ts';
import { baseOf, ConsoleClient, consoleOperator, tokenOf } from '../support/console-client.ts';
import { useConsoleStack } from '../support/console-stack.ts';

/** No password, session id, set-password token or full key reaches the database or the log. */

const t = useConsoleStack();

describe('secrets', () => {
  it('no password, session id, set-password token or full key reaches the database or the log, even at trace level', async () => {
    const { logger, written } = recordingLogger('gateway');
    const gateway = await t.stack.anotherGateway({ logger });
    const secrets: string[] = [];
    try {
      const here = baseOf(gateway.url);
      const account = await t.stack.createAccountWithKey('Secrets');
      const invited = await inviteOwner(consoleOperator(t.stack), { accountId: account.accountId, email: `secrets.${Date.now()}@example.com` });
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

    const tables = (await t.db.query("select table_name from information_schema.tables where table_schema = 'accounts'")).rows.map((row) => row.table_name);
    expect(tables).toEqual(expect.arrayContaining(['owners', 'sessions', 'set_password_tokens', 'security_events', 'sign_in_failures', 'api_keys']));
    let dump = '';
    for (const table of tables) {
      const rows = await t.db.query(`select row_to_json(t)::text as row from accounts.${table} t`);
      dump += rows.rows.map((row) => row.row).join('\n');
    }
    const log = written();
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
