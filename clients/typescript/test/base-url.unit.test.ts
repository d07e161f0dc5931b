import { describe, expect, it } from 'vitest';
import { OtsAuthenticationError, OtsClient } from '../src/index.ts';

/** The client's addresses (contract section 10: `{base_url}/graphql`), with a `fetch` that records them. */
function recording() {
  const urls: string[] = [];
  const fetch: typeof globalThis.fetch = async (input) => {
    urls.push(String(input instanceof Request ? input.url : input));
    return new Response(JSON.stringify({ detail: 'Invalid or expired API key' }), { status: 401, headers: { 'content-type': 'application/json' } });
  };
  return { urls, fetch };
}

describe('baseUrl', () => {
  it.each([
    ['https://h.example/ots/', 'https://h.example/ots'],
    ['https://h.example/ots', 'https://h.example/ots'],
    ['https://h.example/a/b//', 'https://h.example/a/b'],
    ['http://127.0.0.1:4000', 'http://127.0.0.1:4000'],
    ['http://127.0.0.1:4000/', 'http://127.0.0.1:4000'],
  ])('%s keeps its path: calls go to %s/graphql, the event stream to /graphql/stream under it', async (baseUrl, expected) => {
    const { urls, fetch } = recording();
    const client = new OtsClient({ apiKey: 'svc_live_any', baseUrl, fetch, maxNetworkRetries: 0 });
    await expect(client.viewer()).rejects.toBeInstanceOf(OtsAuthenticationError);
    await expect(client.events.stream({ after: 'c1' })[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(OtsAuthenticationError);
    expect(urls).toEqual([`${expected}/graphql`, `${expected}/graphql/stream`]);
  });

  it.each(['http://127.0.0.1:4000/graphql', 'https://h.example/ots/graphql/'])('%s, the endpoint rather than the base, is refused when the client is made, naming the fix', (baseUrl) => {
    expect(() => new OtsClient({ apiKey: 'svc_live_any', baseUrl })).toThrow(/baseUrl is the service's address, without \/graphql/);
  });
});
