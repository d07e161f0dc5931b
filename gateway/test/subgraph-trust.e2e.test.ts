import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ASSERTION_HEADER, signAssertion } from '@ots/shared/assertion';
import { SERVICE_NAMES, type ServiceName } from '@ots/shared/config';
import { API_KEY_SCOPES } from '@ots/shared/scopes';
import { useStack } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';

const t = useStack({ redis: 'none', accounts: ['alice'] });

const stranger = generateKeyPairSync('ed25519');

/** A query every subgraph answers, whatever its own schema. */
const TYPENAME = JSON.stringify({ query: '{ __typename }' });

function direct(name: ServiceName, headers: Record<string, string>, body = TYPENAME): Promise<HttpResult> {
  return t.stack.post(body, { 'content-type': 'application/json', ...headers }, t.stack.urls[name]);
}

function expectRefused(result: HttpResult) {
  expect(result.status).toBe(401);
  expect(result.body).not.toHaveProperty('data');
  expect(JSON.stringify(result.body)).not.toContain(t.alice.accountId);
}

const identity = () => ({ accountId: t.alice.accountId, apiKeyId: t.alice.apiKeyId, scopes: [...API_KEY_SCOPES] });

describe.each(SERVICE_NAMES.map((name) => [name]))('the %s subgraph, reached directly', (name) => {
  it('refuses a request without an assertion', async () => {
    expectRefused(await direct(name, {}));
  });

  it('refuses a made-up account header', async () => {
    expectRefused(await direct(name, { 'x-account-id': t.alice.accountId, 'x-api-key-id': t.alice.apiKeyId, 'x-user-id': t.alice.accountId }));
  });

  it('refuses the API key itself: subgraphs never take keys', async () => {
    expectRefused(await direct(name, { 'x-api-key': t.alice.apiKey }));
  });

  it('refuses a garbage assertion', async () => {
    for (const garbage of ['garbage', 'v1.e30.AAAA', `v1.${Buffer.from(JSON.stringify({ acc: t.alice.accountId })).toString('base64url')}.x`]) {
      expectRefused(await direct(name, { [ASSERTION_HEADER]: garbage }));
    }
  });

  it('refuses an assertion signed by another Ed25519 key', async () => {
    expectRefused(await direct(name, { [ASSERTION_HEADER]: signAssertion(stranger.privateKey, identity(), 60) }));
  });

  it('refuses an expired assertion', async () => {
    const expired = signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60, Date.now() - 5 * 60_000);
    expectRefused(await direct(name, { [ASSERTION_HEADER]: expired }));
  });

  it('refuses a genuine assertion whose account was swapped', async () => {
    const genuine = signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60);
    const [version, payload, signature] = genuine.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const swapped = Buffer.from(JSON.stringify({ ...claims, acc: '01a2002f-5e6c-707d-8b35-116f38247cd4' })).toString('base64url');
    expectRefused(await direct(name, { [ASSERTION_HEADER]: `${version}.${swapped}.${signature}` }));
  });

  it('accepts a valid assertion signed with the gateway key', async () => {
    const result = await direct(name, { [ASSERTION_HEADER]: signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60) });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ data: { __typename: 'Query' } });
  });
});

describe('account data on the accounts subgraph', () => {
  const VIEWER = JSON.stringify({ query: '{ viewer { account { id name } } }' });

  it('a forged account header gets nothing; the gateway assertion gets the account', async () => {
    expectRefused(await direct('accounts', { 'x-account-id': t.alice.accountId }, VIEWER));
    const asserted = await direct('accounts', { [ASSERTION_HEADER]: signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60) }, VIEWER);
    expect(asserted.status).toBe(200);
    expect(asserted.body.data.viewer.account).toEqual({ id: t.alice.accountId, name: 'Alice' });
  });
});
