import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { FaultProxy } from '../../../testing/fault-proxy.ts';
import { OtsClient } from '../src/index.ts';

/**
 * `client.events.stream` against the real stack's GraphQL-over-SSE endpoint, through a relay that
 * cuts open streams (contract section 10): every event arrives once, in order, across the cuts.
 */
const t = useStack({ env: NO_RATE_LIMIT_ENV, accounts: [] });
let proxy: FaultProxy;

beforeAll(async () => {
  proxy = await new FaultProxy(new URL(t.stack.gatewayUrl)).start();
});
afterAll(async () => {
  await proxy?.close();
});

describe('the event stream', () => {
  it('resumes after dropped connections with every event once, in order', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin });
    // The feed's current end: the stream starts there, so no event of this test is before it.
    const start = client.events.list();
    await start.toArray();
    const stream = client.events.stream({ filter: { types: ['strategy.created'] }, after: start.cursor });
    const names = Array.from({ length: 12 }, (_, i) => `Streamed ${i}`);
    const seen: string[] = [];
    const consumed = (async () => {
      for await (const event of stream) {
        seen.push(String(event.data.name));
        if (seen.length === names.length) return;
      }
    })();
    for (const [i, name] of names.entries()) {
      await client.strategies.create({ name });
      if (i % 4 === 3) proxy.dropStreams();
    }
    await consumed;
    expect(seen).toEqual(names);
    expect(stream.cursor).toBeDefined();
  });

  it('ends with OtsAuthenticationError for a bad key', async () => {
    const client = new OtsClient({ apiKey: 'svc_live_notakey', baseUrl: proxy.origin });
    const iterate = async () => {
      for await (const event of client.events.stream()) return event;
    };
    await expect(iterate()).rejects.toMatchObject({ name: 'OtsAuthenticationError' });
  });
});
