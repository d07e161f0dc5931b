import { createServer, type Server } from 'node:http';
import { buildSchema, GraphQLError } from 'graphql';
import { createHandler } from 'graphql-sse/lib/use/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../../testing/fault-proxy.ts';
import { OtsAuthenticationError, OtsClient } from '../src/index.ts';

/**
 * The client's side of the event stream (contract section 10) against a small GraphQL-over-SSE server
 * of the contract's shape: an `events(after)` subscription that replays what follows the cursor, then
 * goes live. Cut streams and a SLOW_CONSUMER ending are resumed from the last cursor handed out, so
 * the consumer sees each event once, in order.
 */
const schema = buildSchema(`
  scalar JSON
  input EventFilter { types: [String!] }
  type Event { id: ID! type: String! occurredAt: String! data: JSON! }
  type EventStreamItem { cursor: String! event: Event! }
  type Query { ok: Boolean }
  type Subscription { events(after: String, filter: EventFilter): EventStreamItem! }
`);

interface Item {
  cursor: string;
  event: { id: string; type: string; occurredAt: string; data: Record<string, unknown> };
}
const log: Item[] = [];
const waiters = new Set<() => void>();
/**
 * A cursor after which the stream opened from a given cursor ends with SLOW_CONSUMER (keyed by both,
 * since the stream a cut left behind on the server may still be running).
 */
const slowAfter = new Map<string, string>();
const opened: (string | null)[] = [];

function publish(count: number) {
  for (let i = 0; i < count; i += 1) {
    const n = log.length + 1;
    log.push({ cursor: `c${n}`, event: { id: `e${n}`, type: 'strategy.created', occurredAt: new Date().toISOString(), data: { n } } });
  }
  for (const wake of waiters) wake();
}

async function* events(after: string | null): AsyncGenerator<{ events: Item | (() => never) }> {
  opened.push(after);
  let next = after === null ? log.length : log.findIndex((item) => item.cursor === after) + 1;
  for (;;) {
    while (next < log.length) {
      const item = log[next]!;
      next += 1;
      yield { events: item };
      if (slowAfter.get(item.cursor) === after) {
        slowAfter.delete(item.cursor);
        yield {
          events: () => {
            throw new GraphQLError('The consumer fell behind', { extensions: { code: 'SLOW_CONSUMER', cursor: item.cursor } });
          },
        };
        return;
      }
    }
    await new Promise<void>((resolve) => {
      const wake = () => {
        waiters.delete(wake);
        resolve();
      };
      waiters.add(wake);
    });
  }
}

let server: Server;
let proxy: FaultProxy;

beforeAll(async () => {
  const field = schema.getSubscriptionType()!.getFields().events!;
  field.subscribe = (_root, args: { after?: string }) => events(args.after ?? null);
  field.resolve = (payload: { events: Item | (() => never) }) => (typeof payload.events === 'function' ? payload.events() : payload.events);
  const handler = createHandler({ schema });
  server = createServer((request, response) => {
    if (request.headers['x-api-key'] !== 'svc_live_good') {
      response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Invalid or expired API key' }));
      return;
    }
    void handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  proxy = await new FaultProxy(new URL(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`)).start();
});

afterAll(async () => {
  await proxy?.close();
  for (const wake of waiters) wake();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

describe('client.events.stream', () => {
  it('resumes after cut connections and a SLOW_CONSUMER ending with every event once, in order', async () => {
    const client = new OtsClient({ apiKey: 'svc_live_good', baseUrl: proxy.origin });
    publish(3);
    const stream = client.events.stream({ after: 'c3' });
    const seen: number[] = [];
    const iterator = stream[Symbol.asyncIterator]();
    const take = async () => {
      const { value } = await iterator.next();
      seen.push(value!.data.n as number);
    };
    // The second connection (opened after c7) ends after c9 for falling behind.
    slowAfter.set('c9', 'c7');
    const opensBefore = opened.length;
    for (let round = 0; round < 4; round += 1) {
      publish(4);
      for (let i = 0; i < 4; i += 1) await take();
      // Cut the connection between rounds: the next round's events must come through a new one.
      proxy.dropStreams();
    }
    await iterator.return?.();
    expect(seen).toEqual(Array.from({ length: 16 }, (_, i) => i + 4));
    expect(stream.cursor).toBe('c19');
    // Opened from c3, then resumed after every cut and after the SLOW_CONSUMER ending, each from the last cursor handed out.
    const resumedFrom = opened.slice(opensBefore);
    expect(resumedFrom[0]).toBe('c3');
    expect(resumedFrom).toContain('c9');
    expect(resumedFrom.length).toBeGreaterThanOrEqual(4);
  });

  it('holds at most 1,000 events the loop has not taken: one more closes the connection, which resumes after the last held', async () => {
    let streamsOpen = 0;
    const countingStreams: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (response.ok && response.headers.get('content-type')?.startsWith('text/event-stream')) {
        streamsOpen += 1;
        init?.signal?.addEventListener('abort', () => (streamsOpen -= 1), { once: true });
      }
      return response;
    };
    const client = new OtsClient({ apiKey: 'svc_live_good', baseUrl: proxy.origin, fetch: countingStreams });
    publish(1);
    const base = log.length;
    const events = client.events.stream({ after: `c${base}` })[Symbol.asyncIterator]();
    const opensBefore = opened.length;
    // The loop takes the first event, then stalls while the server sends the rest at once.
    const first = events.next();
    publish(2_500);
    expect((await first).value?.data.n).toBe(base + 1);
    await expect.poll(() => streamsOpen).toBe(0);
    const seen = [base + 1];
    while (seen.length < 2_500) seen.push((await events.next()).value!.data.n as number);
    await events.return?.();
    expect(seen).toEqual(Array.from({ length: 2_500 }, (_, i) => base + 1 + i));
    // The first connection: the event taken, then 1,000 held; the next found no room.
    expect(opened.slice(opensBefore, opensBefore + 2)).toEqual([`c${base}`, `c${base + 1 + 1_000}`]);
  });

  it('ends with OtsAuthenticationError when the key is refused, without retrying', async () => {
    const client = new OtsClient({ apiKey: 'svc_live_bad', baseUrl: proxy.origin });
    const iterator = client.events.stream()[Symbol.asyncIterator]();
    await expect(iterator.next()).rejects.toBeInstanceOf(OtsAuthenticationError);
  });
});
