import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli, type CliResult } from '../../../testing/admin-cli.ts';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { createAccount } from '../src/index.ts';

/** The CLI's scopes and allowed addresses (contract section 5), each command as an operator runs it. */
let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ env: { FAILED_AUTH_BURST: '10000' } });
});

afterAll(async () => {
  await stack?.close();
});

const cli = (...words: string[]) => runAdminCli(stack, words);
/** Set-up through the use-cases the CLI calls: each CLI run is a process of its own, seconds on a loaded machine. */
const newAccount = async (name: string) => (await createAccount(stack.operator, { name })).id;
/** Each test runs several CLI processes in turn. */
const CLI_TEST_MS = 180_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the CLI's JSON output, read field by field by the assertions
function jsonOf(result: CliResult): Record<string, any> {
  expect(result.code, result.stderr).toBe(0);
  const lines = result.stdout.split('\n').filter((line) => line !== '');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

function expectRefused(result: CliResult, message: RegExp) {
  expect(result.code).not.toBe(0);
  expect(result.stdout).toBe('');
  const lines = result.stderr.split('\n').filter((line) => line !== '');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(message);
}

const viewerKey = async (apiKey: string) => (await stack.graphql(apiKey, '{ viewer { apiKey { scopes allowedCidrs } } }')).body;

describe('scopes and allowed addresses from the CLI', () => {
  it('key create gives every scope and any address by default; --scopes and --allow-cidr narrow it', async () => {
    const accountId = await newAccount('Scoped');
    const full = jsonOf(await cli('key', 'create', '--account', accountId, '--json'));
    expect(full).toMatchObject({ scopes: ['read', 'orders:write', 'fills:write', 'strategies:write', 'webhooks:write'], allowedCidrs: [] });
    const narrow = jsonOf(await cli('key', 'create', '--account', accountId, '--scopes', 'read,fills:write', '--allow-cidr', '127.0.0.1,2001:db8::/32', '--json'));
    expect(narrow).toMatchObject({ scopes: ['read', 'fills:write'], allowedCidrs: ['127.0.0.1/32', '2001:db8::/32'] });
    expect((await viewerKey(narrow.apiKey as string)).data.viewer.apiKey).toEqual({ scopes: ['READ', 'FILLS_WRITE'], allowedCidrs: ['127.0.0.1/32', '2001:db8::/32'] });
  }, CLI_TEST_MS);

  it('key update changes both, --allow-any lifts the restriction; key list and key events show it', async () => {
    const accountId = await newAccount('Updated');
    const { keyId, apiKey } = jsonOf(await cli('key', 'create', '--account', accountId, '--json'));
    expect(jsonOf(await cli('key', 'update', keyId, '--scopes', 'read', '--allow-cidr', '10.0.0.0/8', '--json'))).toEqual({
      keyId,
      scopes: ['read'],
      allowedCidrs: ['10.0.0.0/8'],
    });
    expect((await stack.graphql(apiKey, '{ viewer { apiKey { id } } }')).status).toBe(401);
    expect(jsonOf(await cli('key', 'update', keyId, '--allow-any', '--json'))).toEqual({ keyId, scopes: ['read'], allowedCidrs: [] });
    expect((await viewerKey(apiKey)).data.viewer.apiKey).toEqual({ scopes: ['READ'], allowedCidrs: [] });

    const { keys } = jsonOf(await cli('key', 'list', '--account', accountId, '--json'));
    expect(keys).toEqual([expect.objectContaining({ id: keyId, scopes: ['read'], allowedCidrs: [], replacesKeyId: null, replacedByKeyId: null })]);
    const { events } = jsonOf(await cli('key', 'events', '--account', accountId, '--json'));
    const changes = events.filter((event: { type: string }) => event.type !== 'key.refused_address');
    expect(changes.map((event: { type: string }) => event.type)).toEqual(['key.updated', 'key.updated', 'key.created']);
    expect(changes[1].detail).toMatchObject({ scopes: ['read'], allowedCidrs: ['10.0.0.0/8'], previousAllowedCidrs: [] });
    // The request made while the key was fenced to 10.0.0.0/8 is in the log with its address.
    expect(events).toContainEqual(expect.objectContaining({ type: 'key.refused_address', clientAddress: '127.0.0.1' }));
    const text = await cli('key', 'events', '--account', accountId);
    expect(text.stdout).toContain('scopes read; from 10.0.0.0/8');
  }, CLI_TEST_MS);

  it('key roll keeps the old key\'s scopes and addresses unless told otherwise, and says which key replaces which', async () => {
    const accountId = await newAccount('Rolled');
    const old = jsonOf(await cli('key', 'create', '--account', accountId, '--scopes', 'orders:write', '--allow-cidr', '127.0.0.0/8', '--json'));
    const rolled = jsonOf(await cli('key', 'roll', old.keyId, '--json'));
    expect(rolled).toMatchObject({ previousKeyId: old.keyId, scopes: ['orders:write'], allowedCidrs: ['127.0.0.0/8'] });
    const { keys } = jsonOf(await cli('key', 'list', '--account', accountId, '--json'));
    expect(keys).toEqual([
      expect.objectContaining({ id: old.keyId, replacedByKeyId: rolled.keyId, replacesKeyId: null }),
      expect.objectContaining({ id: rolled.keyId, replacesKeyId: old.keyId, replacedByKeyId: null }),
    ]);
    const listed = (await cli('key', 'list', '--account', accountId)).stdout;
    expect(listed).toMatch(/replaced by svc_live_/);
    expect(listed).toMatch(/replaces svc_live_/);
    const widened = jsonOf(await cli('key', 'roll', rolled.keyId, '--grace', '0s', '--scopes', 'read,orders:write', '--allow-any', '--json'));
    expect(widened).toMatchObject({ scopes: ['read', 'orders:write'], allowedCidrs: [] });
    const text = await cli('key', 'roll', widened.keyId, '--grace', '1h');
    expect(text.stdout).toMatch(new RegExp(`which replaces key ${widened.keyId}`));
  }, CLI_TEST_MS);

  it('account list and owner list', async () => {
    const accountId = await newAccount('Listed');
    const { accounts } = jsonOf(await cli('account', 'list', '--json'));
    expect(accounts).toContainEqual({ accountId, name: 'Listed', apiAccessEnabled: true, createdAt: expect.any(String) });
    const { ownerId } = jsonOf(await cli('owner', 'invite', '--account', accountId, '--email', 'listed@example.com', '--json'));
    expect(jsonOf(await cli('owner', 'list', '--account', accountId, '--json'))).toEqual({
      owners: [{ ownerId, email: 'listed@example.com', passwordSet: false, createdAt: expect.any(String) }],
    });
  }, CLI_TEST_MS);

  it('bad scopes, bad addresses and conflicting options are refused in one line and change nothing', async () => {
    const accountId = await newAccount('Refused');
    const { keyId } = jsonOf(await cli('key', 'create', '--account', accountId, '--json'));
    expectRefused(await cli('key', 'create', '--account', accountId, '--scopes', 'admin'), /unknown scope "admin"/);
    expectRefused(await cli('key', 'create', '--account', accountId, '--allow-cidr', '10.0.0.1/8'), /host bits/);
    expectRefused(await cli('key', 'update', keyId, '--allow-cidr', 'example.com'), /not an IPv4 or IPv6/);
    expectRefused(await cli('key', 'update', keyId, '--allow-cidr', '10.0.0.0/8', '--allow-any'), /not both/);
    expectRefused(await cli('key', 'update', keyId, '--allow-cidr', ','), /at least one address/);
    expectRefused(await cli('key', 'create', '--account', accountId, '--allow-cidr', ' , '), /at least one address/);
    expectRefused(await cli('key', 'update', keyId), /needs --scopes/);
    expectRefused(await cli('key', 'update', keyId, '--scopes', ''), /needs a value|at least one scope/);
    expectRefused(await cli('key', 'create', '--account', accountId, '--allow-any'), /does not apply/);
    const { keys } = jsonOf(await cli('key', 'list', '--account', accountId, '--json'));
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ scopes: ['read', 'orders:write', 'fills:write', 'strategies:write', 'webhooks:write'], allowedCidrs: [] });
  }, CLI_TEST_MS);
});
