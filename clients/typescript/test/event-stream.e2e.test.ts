import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, updateKey } from '@ots/accounts';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { FaultProxy } from '../../../testing/fault-proxy.ts';
import { OtsClient, OtsPermissionError } from '../src/index.ts';

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

  it('is refused with OtsPermissionError naming read for a key without it', async () => {
    const { accountId } = await t.stack.createAccountWithKey();
    const { apiKey } = await createKey(t.stack.operator, { accountId, scopes: ['orders:write'] });
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin });
    const failure = await (async () => {
      for await (const event of client.events.stream()) return event;
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect(failure).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'read' });
  });

  it('ends with OtsPermissionError naming read when its key loses the scope', async () => {
    const { accountId } = await t.stack.createAccountWithKey();
    const { key, apiKey } = await createKey(t.stack.operator, { accountId });
    const client = new OtsClient({ apiKey, baseUrl: proxy.origin });
    const start = client.events.list();
    await start.toArray();
    const events = client.events.stream({ after: start.cursor })[Symbol.asyncIterator]();
    const first = events.next();
    const strategy = await client.strategies.create({ name: 'Before the change' });
    expect((await first).value).toMatchObject({ type: 'strategy.created', data: { id: strategy.id } });
    await updateKey(t.stack.operator, { keyId: key.id, scopes: ['strategies:write'] });
    const failure = await events.next().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect(failure).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'read' });
  });
});
