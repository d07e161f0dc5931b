import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { runAdminCli, type CliResult } from '../../../testing/admin-cli.ts';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { createKey } from '../src/index.ts';
import { insertSecurityEvent } from '../src/repository.ts';
import { baseOf, ConsoleClient, tokenOf } from './support/console-client.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let stack: TestStack;
let base: string;
let db: pg.Client;

beforeAll(async () => {
  stack = await startStack({ env: { FAILED_AUTH_BURST: '10000' } });
  base = baseOf(stack.gatewayUrl);
  db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await stack?.close();
});

/** `npm run admin -- ...` against the stack, with the console's address set to the test gateway's. */
function cli(...words: string[]): Promise<CliResult> {
  return runAdminCli(stack, words, { CONSOLE_BASE_URL: `${base}/` });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the CLI's JSON output, read field by field by the assertions
function jsonOf(result: CliResult): Record<string, any> {
  expect(result.code, result.stderr).toBe(0);
  const lines = result.stdout.split('\n').filter((line) => line !== '');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

function expectRefused(result: CliResult, what: string) {
  expect(result.code, what).not.toBe(0);
  expect(result.stdout, what).toBe('');
  expect(result.stderr.split('\n').filter((line) => line !== ''), what).toHaveLength(1);
}

const LINK = () => new RegExp(`^${base}/set-password#token=[A-Za-z0-9_-]{43}$`);

describe('owner invite, owner reset-password and key events', () => {
  let accountId: string;
  let ownerId: string;
  let client: ConsoleClient;

  it('owner invite --account ID --email EMAIL --json -> {ownerId, setPasswordUrl}; the link sets a password and signs in', async () => {
    ({ accountId } = await stack.createAccountWithKey('CLI owners'));
    const out = jsonOf(await cli('owner', 'invite', '--account', accountId, '--email', 'Desk.Owner@Example.com', '--json'));
    expect(Object.keys(out).sort()).toEqual(['ownerId', 'setPasswordUrl']);
    expect(out.ownerId).toMatch(UUID);
    expect(out.setPasswordUrl).toMatch(LINK());
    ownerId = out.ownerId;
    client = new ConsoleClient(base);
    const set = await client.post('/console/api/set-password', { token: tokenOf(out.setPasswordUrl), password: 'a password of the desk' });
    expect(set.status).toBe(200);
    expect(set.body.owner).toEqual({ id: ownerId, email: 'desk.owner@example.com' });
    expect(set.body.account.id).toBe(accountId);
  });

  it('without --json: the link on its own line, readable', async () => {
    const result = await cli('owner', 'invite', `--account=${accountId}`, '--email=second.owner@example.com');
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(LINK());
    expect(result.stdout).toMatch(/24 hours/);
  });

  it('owner reset-password OWNER_ID --json -> {ownerId, setPasswordUrl}; the owner is signed out everywhere and the old password no longer works', async () => {
    expect((await client.get('/console/api/session')).status).toBe(200);
    const out = jsonOf(await cli('owner', 'reset-password', ownerId, '--json'));
    expect(out).toEqual({ ownerId, setPasswordUrl: expect.stringMatching(LINK()) });
    expect((await client.get('/console/api/session')).status).toBe(401);
    expect((await new ConsoleClient(base).post('/console/api/sign-in', { email: 'desk.owner@example.com', password: 'a password of the desk' })).status).toBe(401);
    const fresh = new ConsoleClient(base);
    expect((await fresh.post('/console/api/set-password', { token: tokenOf(out.setPasswordUrl), password: 'the next password' })).status).toBe(200);
    client = fresh;
  });

  it('key events --account ID --json -> {events: [...]}, newest first, CLI changes without an owner, console ones with theirs', async () => {
    const created = await client.post('/console/api/keys', { label: 'from console' });
    const revoke = jsonOf(await cli('key', 'revoke', created.body.key.id, '--json'));
    expect(revoke.keyId).toBe(created.body.key.id);
    const out = jsonOf(await cli('key', 'events', '--account', accountId, '--json'));
    expect(Object.keys(out)).toEqual(['events']);
    for (const event of out.events) {
      expect(Object.keys(event).sort()).toEqual(['clientAddress', 'detail', 'id', 'keyDisplayPrefix', 'occurredAt', 'ownerEmail', 'type', 'userAgent']);
    }
    const types = out.events.map((event: { type: string }) => event.type);
    expect(types.slice(0, 2)).toEqual(['key.revoked', 'key.created']);
    expect(out.events[0]).toMatchObject({ keyDisplayPrefix: created.body.key.displayPrefix, ownerEmail: null, clientAddress: null });
    expect(out.events[1]).toMatchObject({ keyDisplayPrefix: created.body.key.displayPrefix, ownerEmail: 'desk.owner@example.com', clientAddress: '127.0.0.1' });
    expect(types).toContain('password.set');
    expect(types.filter((type: string) => type === 'password.set')).toHaveLength(2);
    const console = await client.get('/console/api/security-log');
    expect(console.body.events).toEqual(out.events);

    const text = await cli('key', 'events', '--account', accountId);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('key.revoked');
    expect(text.stdout).toContain('operator (CLI)');
    expect(() => JSON.parse(text.stdout)).toThrow();
  });

  it('key events shows a stored control character escaped, in text and JSON alike: the terminal is never sent one', async () => {
    // As written before user agents were cleaned: the console's sign-in took C1 controls as they came.
    const agent = 'agent \u009b2J\u009d0;retitled\u0007\u001b[31m\u007f end';
    await insertSecurityEvent(stack.operator.db, {
      accountId,
      type: 'sign_in.failed',
      occurredAt: new Date(),
      actor: { ownerId, ownerEmail: 'desk.owner@example.com', clientAddress: '198.51.100.7', userAgent: agent },
    });
    const text = await cli('key', 'events', '--account', accountId);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.replaceAll('\n', '')).not.toMatch(/\p{Cc}/u);
    expect(text.stdout).toContain('agent \\u009b2J\\u009d0;retitled\\u0007\\u001b[31m\\u007f end');
    const json = await cli('key', 'events', '--account', accountId, '--json');
    expect(json.stdout.replaceAll('\n', '')).not.toMatch(/\p{Cc}/u);
    expect(jsonOf(json).events[0].userAgent).toBe(agent);
  });

  it('refuses bad calls with one line and a non-zero exit, changing nothing', async () => {
    const { key } = await createKey(stack.operator, { accountId, name: 'kept' });
    const snapshot = async () =>
      JSON.stringify((await db.query('select id, email, password_hash from accounts.owners order by id')).rows) +
      JSON.stringify((await db.query('select id, used_at from accounts.set_password_tokens order by id')).rows) +
      JSON.stringify((await db.query('select id, revoked_at from accounts.api_keys where id = $1', [key.id])).rows);
    const before = await snapshot();
    const calls = [
      ['owner', 'invite', '--account', accountId, '--json'],
      ['owner', 'invite', '--email', 'x@example.com', '--json'],
      ['owner', 'invite', '--account', accountId, '--email', 'not an email', '--json'],
      ['owner', 'invite', '--account', accountId, '--email', 'DESK.owner@example.com', '--json'],
      ['owner', 'invite', '--account', newId(), '--email', 'new@example.com', '--json'],
      ['owner', 'invite', '--account', accountId, '--email', '--json'],
      ['owner', 'reset-password', '--json'],
      ['owner', 'reset-password', newId(), '--json'],
      ['owner', 'reset-password', 'nope', '--json'],
      ['owner', 'frobnicate', '--json'],
      ['key', 'events', '--json'],
      ['key', 'events', '--account', newId(), '--json'],
      ['key', 'events', '--account', accountId, '--grace', '1h', '--json'],
      ['key', 'revoke', key.id, '--json=yes'],
      ['key', 'revoke', key.id, '--unknown'],
      ['key', 'revoke', key.id, '-x'],
    ];
    // Four at a time: each is a Node process, and the machine's two cores are shared.
    for (let start = 0; start < calls.length; start += 4) {
      const batch = calls.slice(start, start + 4);
      const results = await Promise.all(batch.map((args) => cli(...args)));
      results.forEach((result, index) => expectRefused(result, batch[index]!.join(' ')));
    }
    expect(await snapshot()).toBe(before);
  }, 120_000);

  it('--help prints the usage, new commands included', async () => {
    const result = await cli('--help');
    expect(result.code).toBe(0);
    for (const line of ['owner invite --account ACCOUNT_ID --email EMAIL', 'owner reset-password OWNER_ID', 'key events --account ACCOUNT_ID']) {
      expect(result.stdout).toContain(line);
    }
  });
});
