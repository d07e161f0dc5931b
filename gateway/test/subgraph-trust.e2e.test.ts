import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSERTION_HEADER, signAssertion } from '@ots/shared/assertion';
import { SERVICE_NAMES, type ServiceName } from '@ots/shared/config';
import { startStack, type HttpResult, type TestStack } from '../../testing/stack.ts';

let stack: TestStack;
let alice: { accountId: string; apiKeyId: string; apiKey: string };

beforeAll(async () => {
  stack = await startStack({ redis: 'none' });
  alice = await stack.createAccountWithKey('Alice');
});

afterAll(async () => {
  await stack?.close();
});

const stranger = generateKeyPairSync('ed25519');

/** A query every subgraph answers, whatever its own schema. */
const TYPENAME = JSON.stringify({ query: '{ __typename }' });

function direct(name: ServiceName, headers: Record<string, string>, body = TYPENAME): Promise<HttpResult> {
  return stack.post(body, { 'content-type': 'application/json', ...headers }, stack.urls[name]);
}

function expectRefused(result: HttpResult) {
  expect(result.status).toBe(401);
  expect(result.body).not.toHaveProperty('data');
  expect(JSON.stringify(result.body)).not.toContain(alice.accountId);
}

const identity = () => ({ accountId: alice.accountId, apiKeyId: alice.apiKeyId });

describe.each(SERVICE_NAMES.map((name) => [name]))('the %s subgraph, reached directly', (name) => {
  it('refuses a request without an assertion', async () => {
    expectRefused(await direct(name, {}));
  });

  it('refuses a made-up account header', async () => {
    expectRefused(await direct(name, { 'x-account-id': alice.accountId, 'x-api-key-id': alice.apiKeyId, 'x-user-id': alice.accountId }));
  });

  it('refuses the API key itself: subgraphs never take keys', async () => {
    expectRefused(await direct(name, { 'x-api-key': alice.apiKey }));
  });

  it('refuses a garbage assertion', async () => {
    for (const garbage of ['garbage', 'v1.e30.AAAA', `v1.${Buffer.from(JSON.stringify({ acc: alice.accountId })).toString('base64url')}.x`]) {
      expectRefused(await direct(name, { [ASSERTION_HEADER]: garbage }));
    }
  });

  it('refuses an assertion signed by another Ed25519 key', async () => {
    expectRefused(await direct(name, { [ASSERTION_HEADER]: signAssertion(stranger.privateKey, identity(), 60) }));
  });

  it('refuses an expired assertion', async () => {
    const expired = signAssertion(stack.config.assertionPrivateKey!, identity(), 60, Date.now() - 5 * 60_000);
    expectRefused(await direct(name, { [ASSERTION_HEADER]: expired }));
  });

  it('refuses a genuine assertion whose account was swapped', async () => {
    const genuine = signAssertion(stack.config.assertionPrivateKey!, identity(), 60);
    const [version, payload, signature] = genuine.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const swapped = Buffer.from(JSON.stringify({ ...claims, acc: '01a2002f-5e6c-707d-8b35-116f38247cd4' })).toString('base64url');
    expectRefused(await direct(name, { [ASSERTION_HEADER]: `${version}.${swapped}.${signature}` }));
  });

  it('accepts a valid assertion signed with the gateway key', async () => {
    const result = await direct(name, { [ASSERTION_HEADER]: signAssertion(stack.config.assertionPrivateKey!, identity(), 60) });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ data: { __typename: 'Query' } });
  });
});

describe('account data on the accounts subgraph', () => {
  const VIEWER = JSON.stringify({ query: '{ viewer { account { id name } } }' });

  it('a forged account header gets nothing; the gateway assertion gets the account', async () => {
    expectRefused(await direct('accounts', { 'x-account-id': alice.accountId }, VIEWER));
    const asserted = await direct('accounts', { [ASSERTION_HEADER]: signAssertion(stack.config.assertionPrivateKey!, identity(), 60) }, VIEWER);
    expect(asserted.status).toBe(200);
    expect(asserted.body.data.viewer.account).toEqual({ id: alice.accountId, name: 'Alice' });
  });
});
