import { afterEach, describe, expect, it } from 'vitest';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient, type Client as WsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { useStack } from '../../testing/fixture.ts';
import { EVENTS_SUBSCRIPTION, RawSseStream, ingestEvents, streamUrls, type StreamedEvent } from '../../testing/streams.ts';

const t = useStack({ redis: 'direct', env: { OUTBOX_RELAY_INTERVAL_MS: '20', RATE_LIMIT_PER_SECOND: '1000', RATE_LIMIT_BURST: '1000' }, accounts: ['alice', 'bob'] });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const urls = () => streamUrls(t.stack.gatewayUrl);

function rawStream(): RawSseStream {
  const stream = new RawSseStream();
  cleanups.push(() => stream.close());
  return stream;
}

function wsClient(apiKey: string | undefined, options: { viaHeader?: boolean } = {}): WsClient & { closed: Promise<{ code: number; reason: string }> } {
  let closed!: (event: { code: number; reason: string }) => void;
  const closedPromise = new Promise<{ code: number; reason: string }>((resolve) => (closed = resolve));
  const headers = options.viaHeader && apiKey ? { 'x-api-key': apiKey } : {};
  const client = createWsClient({
    url: urls().ws,
    webSocketImpl: class extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers });
      }
    },
    connectionParams: options.viaHeader || !apiKey ? undefined : { 'X-API-Key': apiKey },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { closed: (event) => closed(event as { code: number; reason: string }) },
  });
  cleanups.push(() => client.dispose());
  return Object.assign(client, { closed: closedPromise });
}

/** The feed's end now, for a stream that starts from it (listEvents' endCursor after reading everything). */
async function endCursor(client: typeof t.alice): Promise<string> {
  let after: string | null = null;
  for (;;) {
    const page = await client.listEvents({ first: 200, after });
    after = page.pageInfo.endCursor!;
    if (!page.pageInfo.hasNextPage) return after;
  }
}

describe('the events subscription over SSE (graphql-sse client)', () => {
  it('streams new events in commit order, each with its cursor as the SSE id', async () => {
    const client = await t.newAccount('Sse');
    const after = await endCursor(client);
    const sse = createSseClient({ url: urls().sse, headers: { 'x-api-key': client.apiKey }, retryAttempts: 0 });
    cleanups.push(() => sse.dispose());
    const received: StreamedEvent[] = [];
    const iterator = sse.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION, variables: { after } });
    cleanups.push(() => iterator.return?.());
    const reading = (async () => {
      for await (const result of iterator) {
        received.push(result.data!.events);
        if (received.length === 3) return;
      }
    })();
    for (const name of ['One', 'Two', 'Three']) await client.createdStrategy(name);
    await reading;
    expect(received.map((item) => item.event.data.name)).toEqual(['One', 'Two', 'Three']);
    const feed = await client.listEvents({ first: 10, after });
    expect(received.map((item) => item.event.id)).toEqual(feed.nodes.map((node) => node.id));
    expect(received.map((item) => item.cursor)).toHaveLength(3);
  });
});

describe('the events subscription over WebSocket (graphql-ws client)', () => {
  it('streams new events with the key in connection_init, and closes 4401 without a key', async () => {
    const client = await t.newAccount('Ws');
    const ws = wsClient(client.apiKey);
    const received: StreamedEvent[] = [];
    const iterator = ws.iterate<{ events: StreamedEvent }>({ query: EVENTS_SUBSCRIPTION, variables: { after: await endCursor(client) } });
    const reading = (async () => {
      for await (const result of iterator) {
        received.push(result.data!.events);
        if (received.length === 2) return;
      }
    })();
    await client.createdStrategy('Alpha');
    await client.createdStrategy('Beta');
    await reading;
    expect(received.map((item) => item.event.data.name)).toEqual(['Alpha', 'Beta']);

    const anonymous = wsClient(undefined);
    expect(await anonymous.closed).toMatchObject({ code: 4401, reason: 'Invalid or expired API key' });
  });
});
