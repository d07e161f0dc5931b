import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ASSERTION_HEADER, signAssertion } from '@ots/shared/assertion';
import { API_KEY_SCOPES } from '@ots/shared/scopes';
import { SERVICE_NAMES } from '@ots/shared/config';
import { applyFillRoute } from '@ots/shared/fill-application';
import { newId } from '@ots/shared/ids';
import { useStack } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';

const t = useStack({ redis: 'none', accounts: ['alice'] });

const stranger = generateKeyPairSync('ed25519');

/** A query every subgraph answers, whatever its own schema. */
const TYPENAME = JSON.stringify({ query: '{ __typename }' });

/** A fill of an order that does not exist: orders answers it, and changes nothing. */
const FILL_OF_NO_ORDER = JSON.stringify({ fillId: newId(), orderSubmissionId: newId(), quantity: '1', price: '1', executedAt: '2026-11-24T12:00:00.000Z' });

/** Every way into a subgraph on a caller's behalf: each /graphql, and the route orders serves fills beside it. */
const DOORS = [
  ...SERVICE_NAMES.map((name) => ({ door: `the ${name} subgraph's /graphql`, url: () => t.stack.urls[name], body: TYPENAME, answer: { data: { __typename: 'Query' } } })),
  {
    door: "the orders subgraph's fill route",
    url: () => new URL(applyFillRoute.path, t.stack.urls.orders).href,
    body: FILL_OF_NO_ORDER,
    answer: { outcome: 'NOT_FOUND', orderSubmission: null },
  },
];

function direct(url: string, headers: Record<string, string>, body: string): Promise<HttpResult> {
  return t.stack.post(body, { 'content-type': 'application/json', ...headers }, url);
}

function expectRefused(result: HttpResult) {
  expect(result.status).toBe(401);
  expect(result.body).not.toHaveProperty('data');
  expect(JSON.stringify(result.body)).not.toContain(t.alice.accountId);
}

const identity = () => ({ accountId: t.alice.accountId, apiKeyId: t.alice.apiKeyId, scopes: [...API_KEY_SCOPES] });

describe.each(DOORS)('$door, reached directly', ({ url, body, answer }) => {
  it('refuses a request without an assertion', async () => {
    expectRefused(await direct(url(), {}, body));
  });

  it('refuses a made-up account header', async () => {
    expectRefused(await direct(url(), { 'x-account-id': t.alice.accountId, 'x-api-key-id': t.alice.apiKeyId, 'x-user-id': t.alice.accountId }, body));
  });

  it('refuses the API key itself: subgraphs never take keys', async () => {
    expectRefused(await direct(url(), { 'x-api-key': t.alice.apiKey }, body));
  });

  it('refuses a garbage assertion', async () => {
    for (const garbage of ['garbage', 'v1.e30.AAAA', `v1.${Buffer.from(JSON.stringify({ acc: t.alice.accountId })).toString('base64url')}.x`]) {
      expectRefused(await direct(url(), { [ASSERTION_HEADER]: garbage }, body));
    }
  });

  it('refuses an assertion signed by another Ed25519 key', async () => {
    expectRefused(await direct(url(), { [ASSERTION_HEADER]: signAssertion(stranger.privateKey, identity(), 60) }, body));
  });

  it('refuses an expired assertion', async () => {
    const expired = signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60, Date.now() - 5 * 60_000);
    expectRefused(await direct(url(), { [ASSERTION_HEADER]: expired }, body));
  });

  it('refuses a genuine assertion whose account was swapped', async () => {
    const genuine = signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60);
    const [version, payload, signature] = genuine.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const swapped = Buffer.from(JSON.stringify({ ...claims, acc: '01a2002f-5e6c-707d-8b35-116f38247cd4' })).toString('base64url');
    expectRefused(await direct(url(), { [ASSERTION_HEADER]: `${version}.${swapped}.${signature}` }, body));
  });

  it('accepts a valid assertion signed with the gateway key', async () => {
    const result = await direct(url(), { [ASSERTION_HEADER]: signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60) }, body);
    expect(result.status).toBe(200);
    expect(result.body).toEqual(answer);
  });
});

describe('account data on the accounts subgraph', () => {
  const VIEWER = JSON.stringify({ query: '{ viewer { account { id name } } }' });

  it('a forged account header gets nothing; the gateway assertion gets the account', async () => {
    expectRefused(await direct(t.stack.urls.accounts, { 'x-account-id': t.alice.accountId }, VIEWER));
    const asserted = await direct(t.stack.urls.accounts, { [ASSERTION_HEADER]: signAssertion(t.stack.config.assertionPrivateKey!, identity(), 60) }, VIEWER);
    expect(asserted.status).toBe(200);
    expect(asserted.body.data.viewer.account).toEqual({ id: t.alice.accountId, name: 'Alice' });
  });
});
