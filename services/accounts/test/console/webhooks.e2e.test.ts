import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type TestStack } from '../../../../testing/stack.ts';
import { accountWithOwner, baseOf, ConsoleClient } from '../support/console-client.ts';

/**
 * The console's webhook routes (`/console/api/webhooks…`): the session's account only, reached
 * through the events subgraph with an assertion minted for that account; same-origin POSTs only.
 */

let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await startStack();
  base = baseOf(stack.gatewayUrl);
});

afterAll(async () => {
  await stack?.close();
});

const ENDPOINTS = '{ listWebhookEndpoints { id url description status } }';

describe('console webhook routes', () => {
  it('create, list, disable, enable, rotate and delete act on the session account, as its API key sees it', async () => {
    const owner = await accountWithOwner(stack, base, 'Hooks A');
    const empty = await owner.client.get('/console/api/webhooks');
    expect(empty.status).toBe(200);
    expect(empty.body.endpoints).toEqual([]);
    expect(empty.body.eventTypes).toContain('strategy.created');

    const created = await owner.client.post('/console/api/webhooks', { url: 'http://127.0.0.1:9/hooks', eventTypes: ['strategy.created'], description: 'desk' });
    expect(created.status).toBe(201);
    expect(created.body.signingSecret).toMatch(/^whsec_/);
    expect(created.body.endpoint).toMatchObject({ url: 'http://127.0.0.1:9/hooks', eventTypes: ['strategy.created'], description: 'desk', status: 'ENABLED', deliveries: [] });
    const id: string = created.body.endpoint.id;

    // The account's API key sees the same endpoint through /graphql.
    const viaApi = await stack.graphql(owner.apiKey, ENDPOINTS);
    expect(viaApi.body.data.listWebhookEndpoints).toEqual([{ id, url: 'http://127.0.0.1:9/hooks', description: 'desk', status: 'ENABLED' }]);

    const listed = await owner.client.get('/console/api/webhooks');
    expect(listed.body.endpoints.map((endpoint: { id: string }) => endpoint.id)).toEqual([id]);
    // The secret is shown once: never in a listing.
    expect(JSON.stringify(listed.body)).not.toContain(created.body.signingSecret);

    const disabled = await owner.client.post(`/console/api/webhooks/${id}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body.endpoint).toMatchObject({ id, status: 'DISABLED', disabledReason: expect.any(String) });
    const enabled = await owner.client.post(`/console/api/webhooks/${id}/enable`);
    expect(enabled.body.endpoint).toMatchObject({ id, status: 'ENABLED', disabledReason: null });

    const rotated = await owner.client.post(`/console/api/webhooks/${id}/rotate-secret`, { grace: '1h' });
    expect(rotated.status).toBe(201);
    expect(rotated.body.signingSecret).toMatch(/^whsec_/);
    expect(rotated.body.signingSecret).not.toBe(created.body.signingSecret);
    const badGrace = await owner.client.post(`/console/api/webhooks/${id}/rotate-secret`, { grace: '3d' });
    expect(badGrace.status).toBe(400);
    expect(badGrace.body.field).toBe('grace');

    const deleted = await owner.client.post(`/console/api/webhooks/${id}/delete`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.endpoint.id).toBe(id);
    expect((await owner.client.get('/console/api/webhooks')).body.endpoints).toEqual([]);
    expect((await owner.client.post(`/console/api/webhooks/${id}/disable`)).status).toBe(404);
  });

  it('refuses what the events service refuses, with its field', async () => {
    const owner = await accountWithOwner(stack, base, 'Hooks validation');
    const missing = await owner.client.post('/console/api/webhooks', { eventTypes: [] });
    expect(missing.status).toBe(400);
    expect(missing.body.field).toBe('url');
    const notUrl = await owner.client.post('/console/api/webhooks', { url: 'ftp://example.com/hooks' });
    expect(notUrl.status).toBe(400);
    expect(notUrl.body).toEqual({ detail: expect.any(String), field: expect.stringMatching(/url/) });
    const badType = await owner.client.post('/console/api/webhooks', { url: 'http://127.0.0.1:9/x', eventTypes: ['no.such'] });
    expect(badType.status).toBe(400);
    expect(badType.body.field).toMatch(/eventTypes/);
  });

  it("another account's endpoint is not found, whatever the action; unknown actions are not found", async () => {
    const a = await accountWithOwner(stack, base, 'Hooks owner A');
    const b = await accountWithOwner(stack, base, 'Hooks owner B');
    const created = await a.client.post('/console/api/webhooks', { url: 'http://127.0.0.1:9/a' });
    const id: string = created.body.endpoint.id;

    expect((await b.client.get('/console/api/webhooks')).body.endpoints).toEqual([]);
    for (const action of ['disable', 'enable', 'delete']) {
      const answer = await b.client.post(`/console/api/webhooks/${id}/${action}`);
      expect(answer.status, action).toBe(404);
      expect(answer.body).toEqual({ detail: 'Not found' });
    }
    expect((await b.client.post(`/console/api/webhooks/${id}/rotate-secret`, { grace: 'now' })).status).toBe(404);
    expect((await a.client.post(`/console/api/webhooks/${id}/explode`)).status).toBe(404);
    expect((await a.client.post('/console/api/webhooks/not-an-id/disable')).status).toBe(404);
    // Not an outage either: an id the events service refuses outright (a control character) is no endpoint of the account's.
    for (const action of ['disable', 'rotate-secret']) {
      const answer = await a.client.post(`/console/api/webhooks/%01/${action}`, { grace: 'now' });
      expect([action, answer.status, answer.body]).toEqual([action, 404, { detail: 'Not found' }]);
    }

    // Untouched for its owner.
    const mine = await a.client.get('/console/api/webhooks');
    expect(mine.body.endpoints).toEqual([expect.objectContaining({ id, status: 'ENABLED' })]);
  });

  it('needs a session (401) and a same-origin POST (403)', async () => {
    const anonymous = new ConsoleClient(base);
    expect((await anonymous.get('/console/api/webhooks')).status).toBe(401);
    const post = await anonymous.post('/console/api/webhooks', { url: 'http://127.0.0.1:9/x' });
    expect(post.status).toBe(401);
    expect(post.body).toEqual({ detail: 'Sign in required' });
    expect((await anonymous.post('/console/api/webhooks/x/disable')).status).toBe(401);

    const owner = await accountWithOwner(stack, base, 'Hooks CSRF');
    const created = await owner.client.post('/console/api/webhooks', { url: 'http://127.0.0.1:9/c' });
    const id: string = created.body.endpoint.id;
    const refused: Record<string, string>[] = [{ origin: 'https://evil.example' }, { origin: 'null' }, { origin: '', 'sec-fetch-site': 'cross-site' }];
    for (const headers of refused) {
      const create = await owner.client.post('/console/api/webhooks', { url: 'http://127.0.0.1:9/evil' }, headers);
      expect(create.status, JSON.stringify(headers)).toBe(403);
      expect(create.body).toEqual({ detail: 'Cross-origin request refused' });
      expect((await owner.client.post(`/console/api/webhooks/${id}/delete`, {}, headers)).status).toBe(403);
    }
    const after = await owner.client.get('/console/api/webhooks');
    expect(after.body.endpoints).toEqual([expect.objectContaining({ id, url: 'http://127.0.0.1:9/c' })]);
    expect(after.headers.get('cache-control')).toBe('no-store');
  });

  it('serves the page at /settings/webhooks', async () => {
    const page = await fetch(`${base}/settings/webhooks`);
    expect([200, 503]).toContain(page.status);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
  });
});
