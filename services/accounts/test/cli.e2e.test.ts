import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import { createTestDatabase } from '@ots/shared/testing/database';
import { runAdminCli, runAdminCliThroughNpm, type CliResult } from '../../../testing/admin-cli.ts';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { displayPrefixOf, hashApiKey } from '../src/domain.ts';
import { createKey, revokeKey } from '../src/index.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const KEY = /^svc_live_[0-9A-Za-z]{38}$/;
/** The contract's key fields, with what issue 22 added: scopes, allowed addresses and the roll chain. */
const KEY_FIELDS = ['allowedCidrs', 'createdAt', 'displayPrefix', 'environment', 'expiresAt', 'id', 'keyId', 'lastUsedAt', 'name', 'replacedByKeyId', 'replacesKeyId', 'revokedAt', 'scopes'];

let stack: TestStack;
let db: pg.Client;

beforeAll(async () => {
  stack = await startStack({ env: { FAILED_AUTH_BURST: '10000' } });
  db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
  await stack?.close();
});

/** `npm run admin -- ...` as an operator runs it, against the stack's database and Redis. */
function cli(...args: (string | Record<string, string>)[]): Promise<CliResult> {
  const words = args.filter((arg): arg is string => typeof arg === 'string');
  return runAdminCli(stack, words, Object.assign({}, ...args.filter((arg) => typeof arg !== 'string')));
}

/** A successful --json command: exit 0, exactly one JSON object on one line of stdout. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the CLI's JSON output, read field by field by the assertions
function jsonOf(result: CliResult): Record<string, any> {
  expect(result.code, result.stderr).toBe(0);
  const lines = result.stdout.split('\n').filter((line) => line !== '');
  expect(lines).toHaveLength(1);
  const parsed = JSON.parse(lines[0]!);
  expect(parsed).toBeTypeOf('object');
  expect(Array.isArray(parsed)).toBe(false);
  return parsed;
}

/** A successful command without --json: exit 0, readable text (not JSON) on stdout. */
function textOf(result: CliResult): string {
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout.trim()).not.toBe('');
  expect(() => JSON.parse(result.stdout)).toThrow();
  return result.stdout;
}

/** Room for several CLI processes (each a Node process of its own) on a busy machine. */
const CLI_TEST_TIMEOUT_MS = 120_000;

/**
 * Runs the calls three at a time and returns their results in order: each is a Node process that
 * loads the CLI as it starts, and the machine's two cores are shared, so more at once only makes
 * each slower, past its own timeout.
 */
async function cliInBatches(calls: readonly (readonly string[])[]): Promise<CliResult[]> {
  const results: CliResult[] = [];
  for (let start = 0; start < calls.length; start += 3) {
    results.push(...(await Promise.all(calls.slice(start, start + 3).map((args) => cli(...args)))));
  }
  return results;
}

/** A refused command: non-zero exit, exactly one line on stderr, nothing on stdout. */
function expectRefused(result: CliResult, call: string[]) {
  const what = `${call.join(' ')} -> ${result.code}: ${result.stderr}${result.stdout}`;
  expect(result.code, what).not.toBe(0);
  expect(result.stdout, what).toBe('');
  const lines = result.stderr.split('\n').filter((line) => line !== '');
  expect(lines, what).toHaveLength(1);
  expect(lines[0]!.length).toBeGreaterThan(5);
}

describe('npm run admin', () => {
  it('runs the CLI the other tests run bundled: an account created through it is in the database', async () => {
    const { accountId } = jsonOf(await runAdminCliThroughNpm(stack, ['account', 'create', '--name', 'Through npm', '--json']));
    expect((await db.query('select name from accounts.accounts where id = $1', [accountId])).rows).toEqual([{ name: 'Through npm' }]);
  }, CLI_TEST_TIMEOUT_MS);
});

async function snapshot() {
  const accounts = await db.query('select id, name, api_access_enabled from accounts.accounts order by id');
  const keys = await db.query('select id, account_id, name, expires_at, revoked_at, key_hash from accounts.api_keys order by id');
  return JSON.stringify({ accounts: accounts.rows, keys: keys.rows });
}

const viewer = (apiKey: string) => stack.graphql(apiKey, '{ viewer { account { id } apiKey { id name expiresAt } } }');
const UUID_IN_TEXT = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const KEY_IN_TEXT = /svc_live_[0-9A-Za-z]{38}/;

interface Watched {
  answers: { at: number; status: number }[];
  result: CliResult;
  exitedAt: number;
}

/**
 * Keeps asking the gateway with `apiKey` (every 50 ms) while the command runs and afterwards until
 * the gateway answers `status` or 3 s have passed: a test can then check when the change took effect.
 */
async function watchWhile(apiKey: string, during: Promise<CliResult>, status: number): Promise<Watched> {
  const answers: { at: number; status: number }[] = [];
  let exitedAt: number | undefined;
  void during.then(() => (exitedAt = Date.now()));
  for (;;) {
    const sentAt = Date.now();
    const result = await stack.graphql(apiKey, '{ viewer { account { id } } }');
    answers.push({ at: sentAt, status: result.status });
    if (exitedAt !== undefined && (result.status === status || Date.now() - exitedAt > 3_000)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { answers, result: await during, exitedAt: exitedAt! };
}

/** The change took effect within 1 s of `since`: no request sent after since + 1000 ms got another answer. */
function expectEffectiveWithin1s(watched: Watched, status: number, since: number) {
  expect(watched.answers.at(-1)!.status).toBe(status);
  const late = watched.answers.filter((answer) => answer.at > since + 1_000 && answer.status !== status);
  expect(late, `answers after ${new Date(since + 1_000).toISOString()}`).toEqual([]);
}

/** Each command with --json (one object of exactly the documented keys); the first three also without it. */
describe('every command, with --json and without', () => {
  let accountId: string;
  let humanAccountId: string;
  let first: { keyId: string; apiKey: string };
  let human: { keyId: string; apiKey: string };

  it('account create --name NAME -> {accountId}', async () => {
    const [json, text] = await Promise.all([cli('account', 'create', '--name', 'Desk 1', '--json'), cli('account', 'create', '--name', 'Human desk')]);
    const out = jsonOf(json);
    expect(Object.keys(out)).toEqual(['accountId']);
    expect(out.accountId).toMatch(UUID);
    accountId = out.accountId;
    const rows = await db.query('select name, api_access_enabled from accounts.accounts where id = $1', [accountId]);
    expect(rows.rows).toEqual([{ name: 'Desk 1', api_access_enabled: true }]);

    const said = textOf(text);
    humanAccountId = UUID_IN_TEXT.exec(said)![0];
    expect(said).toContain('Human desk');
    expect((await db.query('select name from accounts.accounts where id = $1', [humanAccountId])).rows).toEqual([{ name: 'Human desk' }]);
  });

  it('key create --account ID [--name] [--expires-in] -> {keyId, apiKey}; the key authenticates through the gateway', async () => {
    const [json, text] = await Promise.all([
      cli('key', 'create', '--account', accountId, '--name', 'bot', '--expires-in', '90d', '--json'),
      cli('key', 'create', '--account', humanAccountId, '--name', 'human-bot', '--expires-in', '30s'),
    ]);
    const out = jsonOf(json);
    expect(Object.keys(out).sort()).toEqual(['allowedCidrs', 'apiKey', 'keyId', 'scopes']);
    expect(out.keyId).toMatch(UUID);
    expect(out.apiKey).toMatch(KEY);
    first = { keyId: out.keyId, apiKey: out.apiKey };
    const result = await viewer(first.apiKey);
    expect(result.status).toBe(200);
    expect(result.body.data.viewer.account.id).toBe(accountId);
    expect(result.body.data.viewer.apiKey).toMatchObject({ id: first.keyId, name: 'bot' });
    const expiresIn = Date.parse(result.body.data.viewer.apiKey.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(90 * 86_400_000 - 120_000);
    expect(expiresIn).toBeLessThanOrEqual(90 * 86_400_000);

    const said = textOf(text);
    const rows = await db.query('select id, expires_at from accounts.api_keys where account_id = $1', [humanAccountId]);
    expect(rows.rows).toHaveLength(1);
    human = { keyId: rows.rows[0].id, apiKey: KEY_IN_TEXT.exec(said)![0] };
    expect(said).toContain(human.keyId);
    expect(rows.rows[0].expires_at.getTime() - Date.now()).toBeLessThanOrEqual(30_000);
    expect((await viewer(human.apiKey)).body.data.viewer.apiKey.id).toBe(human.keyId);
  });

  it('key list --account ID -> {keys: [...]}, never the key or its hash', async () => {
    const { key: secondKey, apiKey: second } = await createKey(stack.operator, { accountId });
    const [json, text] = await Promise.all([cli('key', 'list', '--account', accountId, '--json'), cli('key', 'list', '--account', humanAccountId)]);
    const out = jsonOf(json);
    expect(Object.keys(out)).toEqual(['keys']);
    expect(out.keys).toHaveLength(2);
    for (const key of out.keys) {
      expect(Object.keys(key).sort()).toEqual(KEY_FIELDS);
      // Named as every other command names a key's id, so that a list feeds `key revoke` and `key roll`.
      expect(key.keyId).toBe(key.id);
    }
    const listed = new Map(out.keys.map((key: { id: string }) => [key.id, key]));
    expect(listed.get(first.keyId)).toMatchObject({
      name: 'bot',
      environment: 'LIVE',
      displayPrefix: displayPrefixOf(first.apiKey),
      createdAt: expect.stringMatching(ISO),
      expiresAt: expect.stringMatching(ISO),
      revokedAt: null,
    });
    expect(listed.get(secondKey.id)).toMatchObject({ name: null, expiresAt: null, displayPrefix: displayPrefixOf(second) });
    for (const apiKey of [first.apiKey, second]) {
      expect(json.stdout).not.toContain(apiKey.slice(9));
      const hash = hashApiKey(stack.config.apiKeyHmacSecret, apiKey);
      for (const encoding of ['hex', 'base64', 'base64url'] as const) expect(json.stdout).not.toContain(hash.toString(encoding));
    }

    const said = textOf(text);
    expect(said).toContain(human.keyId);
    expect(said).toContain(displayPrefixOf(human.apiKey));
    expect(said).toContain('human-bot');
    expect(said).not.toContain(human.apiKey.slice(9));
  });

  it('key revoke KEY_ID -> {keyId, revokedAt}; the gateway refuses the key within 1 s', async () => {
    const { key, apiKey } = await createKey(stack.operator, { accountId, name: 'to revoke' });
    expect((await viewer(apiKey)).status).toBe(200);
    // Ids are taken in either case and answered as stored, so that a script can compare them across commands.
    const watched = await watchWhile(apiKey, cli('key', 'revoke', key.id.toUpperCase(), '--json'), 401);
    const out = jsonOf(watched.result);
    expect(Object.keys(out).sort()).toEqual(['keyId', 'revokedAt']);
    expect(out.keyId).toBe(key.id);
    expect(out.revokedAt).toMatch(ISO);
    expectEffectiveWithin1s(watched, 401, Date.parse(out.revokedAt));
    expect((await viewer(first.apiKey)).status).toBe(200);
  });

  it('key roll KEY_ID -> {keyId, apiKey, previousKeyId, previousExpiresAt}; the old key works through the default grace of 24 h', async () => {
    const out = jsonOf(await cli('key', 'roll', first.keyId, '--json'));
    expect(Object.keys(out).sort()).toEqual(['allowedCidrs', 'apiKey', 'keyId', 'previousExpiresAt', 'previousKeyId', 'scopes']);
    expect(out.previousKeyId).toBe(first.keyId);
    expect(out.apiKey).toMatch(KEY);
    expect(out.keyId).not.toBe(first.keyId);
    const grace = Date.parse(out.previousExpiresAt) - Date.now();
    expect(grace).toBeGreaterThan(24 * 3_600_000 - 120_000);
    expect(grace).toBeLessThanOrEqual(24 * 3_600_000);
    const viaNew = await viewer(out.apiKey);
    expect(viaNew.status).toBe(200);
    expect(viaNew.body.data.viewer.apiKey).toMatchObject({ id: out.keyId, name: 'bot' });
    // Made with --expires-in 90d: its successor expires 90 days after the roll, not never.
    const lifetime = Date.parse(viaNew.body.data.viewer.apiKey.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(90 * 86_400_000 - 120_000);
    expect(lifetime).toBeLessThanOrEqual(90 * 86_400_000);
    expect((await viewer(first.apiKey)).status).toBe(200);
    // The rolled key has its successor: rolling it again would leave two keys claiming to replace it.
    const again = await cli('key', 'roll', first.keyId, '--json');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('was rolled already');
    first = { keyId: out.keyId, apiKey: out.apiKey };
  });

  it('key roll KEY_ID --grace 0s ends the old key at once (within 1 s at the gateway)', async () => {
    const previous = first;
    expect((await viewer(previous.apiKey)).status).toBe(200);
    const watched = await watchWhile(previous.apiKey, cli('key', 'roll', previous.keyId, '--grace', '0s', '--json'), 401);
    const out = jsonOf(watched.result);
    expect(out.previousKeyId).toBe(previous.keyId);
    expect(Date.parse(out.previousExpiresAt)).toBeLessThanOrEqual(Date.now());
    expectEffectiveWithin1s(watched, 401, Date.parse(out.previousExpiresAt));
    expect((await viewer(out.apiKey)).status).toBe(200);
    first = { keyId: out.keyId, apiKey: out.apiKey };
  });

  it('account disable-api ID -> {accountId, apiAccessEnabled: false}; the gateway answers 403 within 1 s', async () => {
    expect((await viewer(first.apiKey)).status).toBe(200);
    const watched = await watchWhile(first.apiKey, cli('account', 'disable-api', accountId.toUpperCase(), '--json'), 403);
    expect(jsonOf(watched.result)).toEqual({ accountId, apiAccessEnabled: false });
    // The change is committed before the command exits.
    expectEffectiveWithin1s(watched, 403, watched.exitedAt);
    expect((await viewer(first.apiKey)).body).toEqual({ detail: 'API access is not enabled for this account' });
  });

  it('account enable-api ID -> {accountId, apiAccessEnabled: true}; the gateway serves the account again within 1 s', async () => {
    const watched = await watchWhile(first.apiKey, cli('account', 'enable-api', accountId, '--json'), 200);
    expect(jsonOf(watched.result)).toEqual({ accountId, apiAccessEnabled: true });
    expectEffectiveWithin1s(watched, 200, watched.exitedAt);
  });
});

describe('the admin CLI refuses bad calls: non-zero exit, one line on stderr, nothing changed', () => {
  it('on a database its schema was never migrated to, says in one line what to run, and changes nothing', async () => {
    const empty = await createTestDatabase();
    try {
      const result = await cli('account', 'list', '--json', { DATABASE_URL: empty.url });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe('failed: the accounts schema is not in this database yet: run npm run migrate first\n');
    } finally {
      await empty.drop();
    }
  });

  it('with a configuration of several problems, says them all on one line', async () => {
    const result = await cli('account', 'list', '--json', { LOG_LEVEL: 'verbose', GATEWAY_PORT: '99999' });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^GATEWAY_PORT must be a port number[^\n]*; LOG_LEVEL must be one of [^\n]*\n$/);
  });

  it('a bad command, missing or swallowed arguments, bad or out-of-range durations, an over-long label, unknown ids, and rolling a revoked key', async () => {
    const untouched = await stack.createAccountWithKey('Untouched');
    const revoked = await stack.createAccountWithKey('Already revoked');
    await revokeKey(stack.operator, { keyId: revoked.apiKeyId });
    const unknown = newId();
    const calls = [
      ['account', 'frobnicate', '--json'],
      ['key', 'create', '--json'],
      ['key', 'create', '--account', untouched.accountId, '--expires-in', '5x', '--json'],
      ['key', 'revoke', unknown, '--json'],
      ['account', 'disable-api', unknown, '--json'],
      ['key', 'roll', revoked.apiKeyId, '--json'],
      ['account', 'create', '--name', '--json'],
      ['key', 'create', '--account', untouched.accountId, '--expires-in', '99999999d', '--json'],
      ['key', 'create', '--account', untouched.accountId, '--expires-in', '0s', '--json'],
      ['key', 'create', '--account', untouched.accountId, '--name', 'x'.repeat(101), '--json'],
    ];
    const before = await snapshot();
    const results = await cliInBatches(calls);
    results.forEach((result, index) => expectRefused(result, calls[index]!));
    expect(await snapshot()).toBe(before);
    expect((await viewer(untouched.apiKey)).status).toBe(200);
  }, CLI_TEST_TIMEOUT_MS);

  it('names as the API has them: a tab is refused as a control character, a blank name is called blank', async () => {
    const { accountId } = await stack.createAccountWithKey('Names');
    const before = await snapshot();
    const calls = [
      [['account', 'create', '--name', 'Tab\there'], 'account name must not contain control characters (such as a tab) or unpaired surrogates'],
      [['account', 'create', '--name', '  '], 'account name must not be blank'],
      [['account', 'create', '--name', 'x'.repeat(201)], 'account name must be at most 200 characters'],
      [['key', 'create', '--account', accountId, '--name', 'bot\tone', '--json'], '--name must not contain control characters (such as a tab) or unpaired surrogates'],
      [['key', 'create', '--account', accountId, '--name', ' ', '--json'], '--name must not be blank'],
    ] as const;
    const results = await cliInBatches(calls.map(([call]) => call));
    results.forEach((result, index) => {
      const [call, message] = calls[index]!;
      expectRefused(result, [...call]);
      expect(result.stderr.trim()).toBe(message);
    });
    expect(await snapshot()).toBe(before);
  }, CLI_TEST_TIMEOUT_MS);
});

describe('revoking a revoked key', () => {
  it('succeeds (exit 0), says it was already revoked, and changes nothing: the first time stays, no second log entry', async () => {
    const { accountId } = await stack.createAccountWithKey('Revoked twice');
    const { key } = await createKey(stack.operator, { accountId, name: 'twice' });
    const first = jsonOf(await cli('key', 'revoke', key.id, '--json'));
    const logged = await db.query('select count(*)::int as n from accounts.security_events where key_id = $1', [key.id]);
    const again = await cli('key', 'revoke', key.id, '--json');
    expect(jsonOf(again)).toEqual({ keyId: key.id, revokedAt: first.revokedAt, alreadyRevoked: true });
    const text = await cli('key', 'revoke', key.id);
    expect(text.code).toBe(0);
    expect(text.stdout.trim()).toBe(`key ${key.id} was already revoked at ${first.revokedAt}; nothing changed`);
    expect((await db.query('select count(*)::int as n from accounts.security_events where key_id = $1', [key.id])).rows).toEqual(logged.rows);
    expect((await db.query('select revoked_at from accounts.api_keys where id = $1', [key.id])).rows[0].revoked_at.toISOString()).toBe(first.revokedAt);
  }, CLI_TEST_TIMEOUT_MS);
});

/**
 * The CLI's Redis client refuses commands until it is connected, and `key revoke` invalidates the cache
 * as soon as Postgres has answered. A Redis that is slow to connect (here 700 ms, as a remote or TLS
 * Redis can be) must not leave the revoked key cached: the contract allows 1 s, whatever the caches hold.
 */
describe('the admin CLI with a Redis that is slow to connect', () => {
  it('key revoke still makes the gateway refuse the key within 1 s', async () => {
    const target = new URL(stack.config.redisUrl!);
    const server = net.createServer((client) => {
      client.pause();
      const timer = setTimeout(() => {
        const upstream = net.connect(Number(target.port || 6379), target.hostname);
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.pipe(upstream).pipe(client);
        client.resume();
      }, 700);
      client.on('close', () => clearTimeout(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const slowRedis = new URL(target.toString());
    slowRedis.hostname = '127.0.0.1';
    slowRedis.port = String((server.address() as net.AddressInfo).port);
    try {
      const { apiKeyId, apiKey } = await stack.createAccountWithKey('Slow Redis');
      expect((await viewer(apiKey)).status).toBe(200);
      const watched = await watchWhile(apiKey, cli('key', 'revoke', apiKeyId, '--json', { REDIS_URL: slowRedis.toString() }), 401);
      const out = jsonOf(watched.result);
      expectEffectiveWithin1s(watched, 401, Date.parse(out.revokedAt));
    } finally {
      server.close();
    }
  });
});
