import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import type { Limits } from '@ots/shared/config';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { useStack } from '../../testing/fixture.ts';
import { EVENTS_SUBSCRIPTION, streamUrls } from '../../testing/streams.ts';

const t = useStack({ accounts: ['edge'] });

/** A gateway of the test stack's with other connection limits, on a port of its own. */
async function gatewayWith(limits: Partial<Limits>): Promise<RunningServer> {
  return t.stack.anotherGateway({ config: { limits: { ...t.stack.config.limits, ...limits } } });
}

interface RawClient {
  socket: net.Socket;
  /** Everything the server sent. */
  received(): string;
  /** Resolves when the server (or the test) has closed the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
}

/** A raw connection that sends `head` at once and then one byte of `drip` every 100 ms, for as long as it stays open. */
async function openTrickling(port: number, head: string, drip = 'x'): Promise<RawClient> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  let closed = false;
  socket.on('data', (chunk) => (text += chunk.toString('latin1')));
  socket.on('error', () => {});
  const timer = setInterval(() => socket.write(drip), 100);
  const done = new Promise<void>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      closed = true;
      resolve();
    }),
  );
  if (head) socket.write(head);
  return { socket, received: () => text, closed: done, isClosed: () => closed };
}

const slowHeaders = (port: number) => openTrickling(port, 'POST /graphql HTTP/1.1\r\nHost: gateway\r\nX-Slow: ', 'a');

/** Five requests whose bodies come a byte at a time, once the gateway has closed each of them. */
async function trickledBodies(port: number): Promise<RawClient[]> {
  const head = `POST /graphql HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nX-API-Key: ${t.edge.apiKey}\r\nContent-Length: 10000\r\n\r\n{"query":"`;
  const clients = await Promise.all(Array.from({ length: 5 }, () => openTrickling(port, head)));
  await Promise.all(clients.map((client) => client.closed));
  return clients;
}

async function healthOf(gateway: RunningServer): Promise<number> {
  const response = await fetch(new URL('/healthz', gateway.url));
  await response.arrayBuffer();
  return response.status;
}

async function viewerStatus(gateway: RunningServer): Promise<number> {
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': t.edge.apiKey },
    body: JSON.stringify({ query: '{ viewer { account { id } } }' }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** A WebSocket on /graphql/ws, acknowledged for the edge key. */
async function acknowledgedSocket(gateway: RunningServer): Promise<WebSocket> {
  const socket = new WebSocket(streamUrls(gateway.url).ws, 'graphql-transport-ws', { headers: { 'x-api-key': t.edge.apiKey } });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
    socket.once('message', (data) => (JSON.parse(String(data)).type === 'connection_ack' ? resolve() : reject(new Error(String(data)))));
    socket.once('close', (code) => reject(new Error(`closed with ${code}`)));
  });
  return socket;
}

describe('the connection edge', () => {
  it('WebSockets without a subscription filling the cap give way to health checks and requests; one with a subscription stays', async () => {
    const cap = 10;
    const gateway = await gatewayWith({ maxConnections: cap });
    const sockets: WebSocket[] = [];
    try {
      const subscribed = await acknowledgedSocket(gateway);
      sockets.push(subscribed);
      subscribed.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: EVENTS_SUBSCRIPTION } }));
      while (sockets.length < cap) sockets.push(await acknowledgedSocket(gateway));
      for (let i = 0; i < 3; i += 1) {
        expect(await healthOf(gateway)).toBe(200);
        expect(await viewerStatus(gateway)).toBe(200);
      }
      expect(subscribed.readyState).toBe(WebSocket.OPEN);
    } finally {
      for (const socket of sockets) socket.terminate();
      await gateway.close();
    }
  });


  it('a flood of slow-header connections three times the cap: no more than the cap stay open, and health checks and requests are answered', async () => {
    const cap = 20;
    const gateway = await gatewayWith({ maxConnections: cap });
    const flood: RawClient[] = [];
    try {
      for (let i = 0; i < cap * 3; i += 1) flood.push(await slowHeaders(gateway.port));
      await vi.waitFor(() => expect(flood.filter((client) => !client.isClosed()).length).toBeLessThanOrEqual(cap), { timeout: 5_000 });
      for (let i = 0; i < 3; i += 1) {
        expect(await healthOf(gateway)).toBe(200);
        expect(await viewerStatus(gateway)).toBe(200);
        // The flood keeps coming between checks.
        for (let j = 0; j < cap; j += 1) flood.push(await slowHeaders(gateway.port));
      }
      expect(flood.filter((client) => !client.isClosed()).length).toBeLessThanOrEqual(cap);
    } finally {
      for (const client of flood) client.socket.destroy();
      await gateway.close();
    }
  });

  it('headers not in within the headers timeout close the connection, trickled or not sent at all, while /healthz answers', async () => {
    const gateway = await gatewayWith({ headersTimeoutMs: 1_000, bodyTimeoutMs: 3_000 });
    const clients: RawClient[] = [];
    try {
      for (let i = 0; i < 10; i += 1) clients.push(await slowHeaders(gateway.port));
      clients.push(await openTrickling(gateway.port, '', ''));
      expect(await healthOf(gateway)).toBe(200);
      await Promise.all(clients.map((client) => client.closed));
      for (const client of clients) expect(client.received()).not.toMatch(/^HTTP\/1\.1 2/);
    } finally {
      for (const client of clients) client.socket.destroy();
      await gateway.close();
    }
  });

  it('a body that takes longer than the gateway timeout but arrives within the body timeout is answered', async () => {
    const gateway = await gatewayWith({ gatewayTimeoutMs: 1_000, headersTimeoutMs: 1_000, bodyTimeoutMs: 20_000 });
    try {
      const body = JSON.stringify({ query: '{ viewer { account { id } } }' });
      const head = `POST /graphql HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nX-API-Key: ${t.edge.apiKey}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      // Half the body at once, the rest after twice the gateway timeout.
      const socket = net.connect(gateway.port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('latin1')));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.write(head + body.slice(0, 10));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      socket.write(body.slice(10));
      await closed;
      expect(text).toMatch(/^HTTP\/1\.1 200/);
      expect(text).toContain(t.edge.accountId);
      expect(await healthOf(gateway)).toBe(200);
    } finally {
      await gateway.close();
    }
  });

  it('a body not in within the body timeout closes the connection, even where the gateway timeout is longer', async () => {
    const gateway = await gatewayWith({ gatewayTimeoutMs: 60_000, headersTimeoutMs: 1_000, bodyTimeoutMs: 2_000 });
    try {
      const clients = await trickledBodies(gateway.port);
      for (const client of clients) expect(client.received()).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await gateway.close();
    }
  });
});

/**
 * Node's fetch in a process of its own, as a client is: in the test's own process its writes and the
 * server's close take turns on one event loop, and the broken pipe the contract guards against never shows.
 * Prints the status of each POST, or the error code that stood in for it.
 */
const POST_BODIES = `
const [url, bytes, declared, count, headers] = process.argv.slice(1);
const body = Buffer.alloc(Number(bytes), 'x');
const chunked = () => new ReadableStream({ start(c) { for (let o = 0; o < body.length; o += 65536) c.enqueue(body.subarray(o, o + 65536)); c.close(); } });
const statuses = [];
for (let i = 0; i < Number(count); i += 1) {
  try {
    const response = await fetch(url, { method: 'POST', headers: JSON.parse(headers), body: declared === 'true' ? body : chunked(), duplex: 'half' });
    await response.arrayBuffer();
    statuses.push(response.status);
  } catch (error) {
    statuses.push(String(error.cause?.code ?? error.message));
  }
}
process.stdout.write(JSON.stringify(statuses));
`;

async function postBodies(path: string, options: { bytes: number; declared: boolean; count: number; headers?: Record<string, string> }): Promise<unknown[]> {
  const headers = { 'content-type': 'application/json', 'x-api-key': t.edge.apiKey, ...options.headers };
  const url = new URL(path, t.stack.gatewayUrl).toString();
  const args = ['--input-type=module', '-e', POST_BODIES, url, String(options.bytes), String(options.declared), String(options.count), JSON.stringify(headers)];
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 1024 * 1024 });
  return JSON.parse(stdout) as unknown[];
}

const MiB = 1024 * 1024;
const all = (count: number, status: number) => Array.from({ length: count }, () => status);

describe('a body over the limit', () => {
  it.each([
    [2 * MiB, true],
    [8 * MiB, true],
    [2 * MiB, false],
  ])("Node's fetch sees the 413 for 40 bodies of %i bytes in a row (length declared: %s)", async (bytes, declared) => {
    expect(await postBodies('/graphql', { bytes, declared, count: 40 })).toEqual(all(40, 413));
  });

  it("the console's routes answer 413 the same way, and a cross-origin refusal is seen too", async () => {
    const origin = new URL(t.stack.gatewayUrl).origin;
    expect(await postBodies('/console/api/sign-in', { bytes: 8 * MiB, declared: true, count: 10, headers: { origin } })).toEqual(all(10, 413));
    expect(await postBodies('/console/api/sign-in', { bytes: 2 * MiB, declared: false, count: 10, headers: { origin } })).toEqual(all(10, 413));
    const elsewhere = { origin: 'https://elsewhere.example' };
    expect(await postBodies('/console/api/sign-in', { bytes: 8 * MiB, declared: true, count: 10, headers: elsewhere })).toEqual(all(10, 403));
  });
});
