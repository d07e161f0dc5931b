import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { createKey, setApiAccess } from '@ots/accounts';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import { NO_RATE_LIMIT_ENV, useStack } from '../../../testing/fixture.ts';
import { OtsAuthenticationError, OtsClient, OtsPermissionError } from '../src/index.ts';
import { StallingRelay } from '@ots/shared/testing/stalling-relay';
import { expectAbortEndsStream, take } from './stream-scenarios.ts';

/**
 * `client.events.stream({ transport: 'websocket' })` against the real stack's GraphQL-over-WebSocket
 * endpoint (contract section 4): the guarantees of the SSE transport, over sockets that a relay cuts
 * or stalls, and the close codes that end the stream.
 */
const t = useStack({ env: NO_RATE_LIMIT_ENV, accounts: [] });

afterEach(() => {
  vi.unstubAllGlobals();
});

const gatewayOrigin = () => new URL(t.stack.gatewayUrl).origin;

/** `ws`'s WebSocket, counting the sockets that opened. */
function countingSockets() {
  const counter = {
    opened: 0,
    WebSocket: class extends WebSocket {
      constructor(url: string, protocol: string) {
        super(url, protocol);
        this.once('open', () => (counter.opened += 1));
      }
    },
  };
  return counter;
}

async function startRelay(): Promise<TcpProxy> {
  const gateway = new URL(t.stack.gatewayUrl);
  const relay = new TcpProxy(gateway.hostname, Number(gateway.port));
  await relay.start();
  return relay;
}

/** The feed's current end for `apiKey`'s account: a stream from there sees no event from before the test. */
async function feedEnd(apiKey: string): Promise<string> {
  const start = new OtsClient({ apiKey, baseUrl: gatewayOrigin() }).events.list();
  await start.toArray();
  return start.cursor!;
}

describe('the event stream over WebSocket', () => {
  it('resumes after sockets cut mid-burst with every event once, in order', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const relay = await startRelay();
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey, baseUrl: `http://127.0.0.1:${relay.port}` });
    const direct = new OtsClient({ apiKey, baseUrl: gatewayOrigin() });
    const stream = client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket, filter: { types: ['strategy.created'] }, after: await feedEnd(apiKey) });
    const names = Array.from({ length: 12 }, (_, i) => `Streamed ${i}`);
    const seen: string[] = [];
    const consumed = take(stream, names.length, seen);
    try {
      await expect.poll(() => sockets.opened).toBe(1);
      for (const [i, name] of names.entries()) {
        await direct.strategies.create({ name });
        // Cut while the events just committed are on their way; the next burst goes to the socket that replaced it.
        if (i % 4 === 1) {
          await relay.cut();
          await relay.restore();
          await expect.poll(() => sockets.opened).toBe(2 + (i - 1) / 4);
        }
      }
      await consumed;
      expect(seen).toEqual(names);
      expect(stream.cursor).toBeDefined();
    } finally {
      await relay.cut();
    }
  });

  it('opened from now and cut before its first event, it still sees the events committed during the cut', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const relay = await startRelay();
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey, baseUrl: `http://127.0.0.1:${relay.port}` });
    const direct = new OtsClient({ apiKey, baseUrl: gatewayOrigin() });
    const stream = client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket, filter: { types: ['strategy.created'] } });
    const seen: string[] = [];
    const consumed = take(stream, 2, seen);
    try {
      await expect.poll(() => sockets.opened).toBe(1);
      await relay.cut();
      await direct.strategies.create({ name: 'During the cut' });
      await relay.restore();
      await expect.poll(() => sockets.opened).toBe(2);
      await direct.strategies.create({ name: 'After the cut' });
      await consumed;
      expect(seen).toEqual(['During the cut', 'After the cut']);
    } finally {
      await relay.cut();
    }
  });

  it('replaces a socket that went silent without closing, and sees the next event once', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const relay = await new StallingRelay(new URL(t.stack.gatewayUrl)).start();
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey, baseUrl: relay.origin });
    const direct = new OtsClient({ apiKey, baseUrl: gatewayOrigin() });
    // The client pings every half of it and the gateway answers: a short timeout holds a live socket.
    const idleTimeoutMs = 3_000;
    const seen: string[] = [];
    const stream = client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket, filter: { types: ['strategy.created'] }, after: await feedEnd(apiKey), idleTimeoutMs });
    const consumed = take(stream, 3, seen);
    try {
      await direct.strategies.create({ name: 'Before the silence' });
      await expect.poll(() => seen).toEqual(['Before the silence']);
      // Quiet but alive: the pongs keep the socket.
      await new Promise((resolve) => setTimeout(resolve, 2 * idleTimeoutMs));
      expect(sockets.opened).toBe(1);
      relay.stall();
      // Held by the stalled socket, which never passes it on.
      await direct.strategies.create({ name: 'During the silence' });
      await expect.poll(() => sockets.opened, { timeout: 20_000 }).toBe(2);
      await direct.strategies.create({ name: 'After the silence' });
      await consumed;
      expect(seen).toEqual(['Before the silence', 'During the silence', 'After the silence']);
    } finally {
      await relay.close();
    }
  });

  it('ends without an error when its signal aborts, whether it waits for an event or to reconnect', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const relay = await startRelay();
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey, baseUrl: `http://127.0.0.1:${relay.port}` });
    try {
      await expectAbortEndsStream(relay, () => sockets.opened, (signal) => client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket, signal }));
    } finally {
      await relay.cut();
    }
  });

  it('ends with OtsAuthenticationError when the gateway closes the socket 4401 for a bad key', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey: 'svc_live_notakey', baseUrl: gatewayOrigin() });
    // With a place to start from, the stream asks nothing over HTTP: the socket is the first to see the key.
    const failure = await (async () => {
      for await (const event of client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket, after: await feedEnd(apiKey) })) return event;
    })().catch((error: unknown) => error);
    expect(sockets.opened).toBe(1);
    expect(failure).toBeInstanceOf(OtsAuthenticationError);
    expect((failure as Error).message).toContain('4401');
  });

  it('is refused with OtsPermissionError naming read for a key without it', async () => {
    const { accountId, apiKey: reader } = await t.stack.createAccountWithKey();
    const { apiKey } = await createKey(t.stack.operator, { accountId, scopes: ['orders:write'] });
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey, baseUrl: gatewayOrigin() });
    const failure = await (async () => {
      for await (const event of client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket, after: await feedEnd(reader) })) return event;
    })().catch((error: unknown) => error);
    expect(sockets.opened).toBe(1);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect(failure).toMatchObject({ code: 'FORBIDDEN', requiredScope: 'read' });
  });

  it("ends with OtsPermissionError when the gateway closes the socket 4403 for an account whose access was disabled", async () => {
    const { accountId, apiKey } = await t.stack.createAccountWithKey();
    const sockets = countingSockets();
    const client = new OtsClient({ apiKey, baseUrl: gatewayOrigin() });
    const events = client.events.stream({ transport: 'websocket', webSocketImpl: sockets.WebSocket })[Symbol.asyncIterator]();
    const next = events.next();
    await expect.poll(() => sockets.opened).toBe(1);
    await setApiAccess(t.stack.operator, { accountId, enabled: false });
    const failure = await next.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OtsPermissionError);
    expect((failure as Error).message).toContain('4403');
  });

  it('without a WebSocket class, fails with a TypeError saying to pass one when iteration starts', async () => {
    vi.stubGlobal('WebSocket', undefined);
    const client = new OtsClient({ apiKey: 'svc_live_unused', baseUrl: gatewayOrigin() });
    const stream = client.events.stream({ transport: 'websocket' });
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toThrow(/webSocketImpl/);
  });
});
