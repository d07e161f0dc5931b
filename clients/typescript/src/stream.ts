import { createClient as createSseClient, NetworkError, type ExecutionResult, type RequestParams, type Sink } from 'graphql-sse';
// The client's own entry: the package's main one brings graphql-ws's server, and with it graphql.
import { createClient as createWebSocketClient } from 'graphql-ws/client';
import { OtsApiError, OtsAuthenticationError, OtsError, OtsPermissionError, OtsRateLimitError, OtsRequestError } from './errors.js';
import {
  EventFeedEndDocument,
  type EventFeedEndQuery,
  EventsDocument,
  type EventFieldsFragment,
  type EventFilter,
  type EventsSubscription,
  type EventsSubscriptionVariables,
} from './generated/operations.js';
import { backoffMs, errorOf, retryAfterSeconds, type GraphqlError, type Transport } from './transport.js';

/** What the WebSocket transport needs of a WebSocket class: the browsers' and Node 22's, or the `ws` package's. */
type WebSocketConstructor = (new (url: string, protocol: string) => { readonly readyState: number; close(): void }) & { readonly CONNECTING: number };

export interface EventStreamOptions {
  filter?: EventFilter;
  /**
   * GraphQL over SSE (`{baseUrl}/graphql/stream`, the default) or over WebSocket (`{baseUrl}/graphql/ws`,
   * the `graphql-transport-ws` subprotocol, with the key in `connection_init`). Both keep every
   * guarantee below.
   */
  transport?: 'sse' | 'websocket';
  /**
   * The WebSocket class of the `websocket` transport: `globalThis.WebSocket` by default (browsers,
   * Node 22); on Node 20, which has none, pass the `ws` package's `WebSocket`.
   */
  webSocketImpl?: WebSocketConstructor;
  /** Resume after this cursor (an `EventStream.cursor` or a `listEvents` cursor kept from before); absent: from the feed's end when the stream starts. */
  after?: string;
  /**
   * How long a connection may stay silent before it is taken for dead and replaced (default 25 s).
   * Over SSE the gateway sends a heartbeat at least every 10 s; over WebSocket the client pings every
   * half of it and the gateway answers. So only a connection that is gone (a half-open TCP
   * connection, a proxy that stopped passing bytes) is silent that long.
   */
  idleTimeoutMs?: number;
  /**
   * How many events the stream may hold that the loop has not taken yet (default 1,000, the gateway's
   * own limit for a consumer behind). One more closes the connection; once the loop has taken those
   * it holds, the stream reconnects after the last of them, so a slow loop costs reconnections,
   * never memory, and still sees each event once, in order.
   */
  maxBufferedEvents?: number;
  /** Aborting it ends the iteration, waiting or not: the loop over the stream finishes without an error. */
  signal?: AbortSignal;
}

const DEFAULT_IDLE_TIMEOUT_MS = 25_000;
const DEFAULT_MAX_BUFFERED_EVENTS = 1_000;

/**
 * What `work` resolves to, or undefined as soon as `signal` aborts: a request with all its retries
 * (a gateway that does not answer) may take half a minute, which an abort does not wait for. Its
 * later failure is then nobody's to handle.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (!signal) return work;
  work.catch(() => undefined);
  return new Promise((resolve, reject) => {
    const abort = () => resolve(undefined);
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** A pause that an abort of `signal` cuts short. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, signal?.aborted ? 0 : ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * `fetchFn` whose streamed answer fails once `idleTimeoutMs` passes without a byte, the wait for its
 * headers included. Every byte counts, the heartbeats' comment lines too, which graphql-sse reads and
 * drops without a word: a connection that died without closing then fails as a cut one does, where it
 * would otherwise leave the stream waiting forever.
 */
function failingWhenSilent(fetchFn: typeof fetch, idleTimeoutMs: number): typeof fetch {
  return async (input, init) => {
    const connection = new AbortController();
    const caller = init?.signal;
    const passAbortOn = () => connection.abort(caller?.reason);
    caller?.addEventListener('abort', passAbortOn, { once: true });
    if (caller?.aborted) passAbortOn();
    const silence = () => connection.abort(new Error(`The event stream was silent for ${idleTimeoutMs} ms`));
    let timer = setTimeout(silence, idleTimeoutMs);
    const stop = () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', passAbortOn);
    };
    let response: Response;
    try {
      response = await fetchFn(input, { ...init, signal: connection.signal });
    } catch (error) {
      stop();
      throw error;
    }
    if (!response.ok || !response.body) {
      stop();
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            stop();
            controller.close();
            return;
          }
          clearTimeout(timer);
          timer = setTimeout(silence, idleTimeoutMs);
          controller.enqueue(value);
        } catch (error) {
          stop();
          controller.error(error);
        }
      },
      cancel(reason) {
        stop();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

type EventsResult = ExecutionResult<EventsSubscription, unknown>;

/**
 * Opens one connection's subscription, whose results go to `sink`; the function it returns ends it.
 * graphql-sse's and graphql-ws's clients each have one.
 */
type Subscribe = (request: RequestParams, sink: Sink<EventsResult>) => () => void;

/** One transport of the stream: its connections, and what their failures mean. */
interface Connections {
  subscribe: Subscribe;
  /**
   * The `OtsError` a connection's failure stands for when it ends the stream or says how long to
   * wait; any other failure as it is, to reconnect after back-off.
   */
  failureOf(failure: unknown): unknown;
  /** Ends every subscription open (each completes) and any to come. */
  close(): void;
}

/**
 * One connection's results, in order, holding at most `bound` that the consumer has not taken.
 * Both clients read a connection as fast as it comes, whatever the consumer does (their own
 * `iterate` queues without limit), and offer no way to pull: so a result that finds `bound` held is
 * dropped with the connection, and the results end once the consumer has taken those held,
 * `fellBehind` set. The caller resumes after the last of them, as after the gateway's SLOW_CONSUMER.
 */
class BoundedResults implements AsyncIterable<EventsResult> {
  fellBehind = false;

  constructor(
    private readonly subscribe: Subscribe,
    private readonly request: RequestParams,
    private readonly bound: number,
  ) {}

  async *[Symbol.asyncIterator](): AsyncIterator<EventsResult> {
    const held: EventsResult[] = [];
    let end: { failure?: unknown } | undefined;
    let wake: (() => void) | undefined;
    const unsubscribe = this.subscribe(this.request, {
      next: (result) => {
        // What the parser read along with the result that found no room still comes after the close.
        if (end) return;
        if (held.length < this.bound) held.push(result);
        else {
          this.fellBehind = true;
          end = {};
          unsubscribe();
        }
        wake?.();
      },
      error: (failure) => {
        end ??= { failure };
        wake?.();
      },
      complete: () => {
        end ??= {};
        wake?.();
      },
    });
    try {
      for (;;) {
        const result = held.shift();
        if (result) yield result;
        else if (end) {
          if ('failure' in end) throw end.failure;
          return;
        } else await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      unsubscribe();
    }
  }
}

/** GraphQL over SSE, one graphql-sse client for all the stream's connections. */
function sseConnections(transport: Transport, idleTimeoutMs: number): Connections {
  const client = createSseClient({
    url: transport.streamUrl,
    headers: { 'x-api-key': transport.apiKey },
    // Reconnection is done by EventStream, so that each one asks from the latest cursor.
    retryAttempts: 0,
    fetchFn: failingWhenSilent(transport.fetch, idleTimeoutMs),
  });
  return {
    subscribe: (request, sink) => client.subscribe<EventsSubscription>(request, sink),
    failureOf: (failure) => {
      if (!(failure instanceof NetworkError)) return failure;
      const response = failure.response as Response | undefined;
      const status = response?.status;
      if (status === 401) return new OtsAuthenticationError('Invalid or expired API key', { status });
      if (status === 403) return new OtsPermissionError('API access is not enabled for this account', { status });
      if (status === 400 || status === 415 || status === 422) return new OtsRequestError(`The stream was refused (HTTP ${status})`, { status });
      if (status === 429 && response?.headers) return new OtsRateLimitError('Too many requests', { status, retryAfterSeconds: retryAfterSeconds(response) });
      return failure;
    },
    // graphql-sse's subscribe takes no signal: disposing of the client aborts its connection, and the subscription completes.
    close: () => client.dispose(),
  };
}

function isCloseEvent(value: unknown): value is { code: number; reason: string } {
  return typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'number' && 'reason' in value;
}

/**
 * GraphQL over WebSocket, one graphql-ws client, and so one socket, per connection: a socket that
 * closes ends its subscription, and EventStream opens the next from the latest cursor. The key goes
 * in `connection_init`, which browsers can send where they cannot set a header.
 */
function webSocketConnections(transport: Transport, WebSocketImpl: WebSocketConstructor, idleTimeoutMs: number): Connections {
  const open = new Set<() => void>();
  let stopped = false;
  return {
    subscribe: (request, sink) => {
      if (stopped) {
        sink.complete();
        return () => undefined;
      }
      let socket: InstanceType<WebSocketConstructor> | undefined;
      let silence: ReturnType<typeof setTimeout> | undefined;
      let ended = false;
      // graphql-ws's terminate() closes an open socket at once, where close() would wait for a
      // handshake a dead connection never completes; it cannot reach a socket still connecting,
      // whose close() fails it at once.
      const drop = () => (socket?.readyState === WebSocketImpl.CONNECTING ? socket.close() : client.terminate());
      const listen = () => {
        clearTimeout(silence);
        silence = setTimeout(drop, idleTimeoutMs);
      };
      const end = (report: () => void) => {
        if (ended) return;
        ended = true;
        clearTimeout(silence);
        open.delete(complete);
        report();
        unsubscribe();
        // Unsubscribed, graphql-ws closes an open socket; one still connecting it would wait for.
        if (socket?.readyState === WebSocketImpl.CONNECTING) socket.close();
      };
      const complete = () => end(() => sink.complete());
      const keep = (made: InstanceType<WebSocketConstructor>) => (socket = made);
      const client = createWebSocketClient({
        url: transport.webSocketUrl,
        // Each socket made is kept, so that one still connecting can be closed.
        webSocketImpl: class extends WebSocketImpl {
          constructor(url: string, protocol: string) {
            super(url, protocol);
            keep(this);
          }
        },
        connectionParams: { 'X-API-Key': transport.apiKey },
        // Reconnection is done by EventStream, so that each one asks from the latest cursor.
        retryAttempts: 0,
        // The gateway's own pings are WebSocket ping frames, which no WebSocket API shows: the
        // client's pings, and the gateway's pongs, are what tell a quiet connection from a dead one.
        keepAlive: idleTimeoutMs / 2,
        on: {
          message: () => {
            if (!ended) listen();
          },
          // Every close ends the subscription, even a normal one (1000), after which graphql-ws would
          // subscribe again on a new socket from the cursor the subscription started at.
          closed: (event) => end(() => sink.error(event)),
        },
      });
      open.add(complete);
      listen();
      const unsubscribe = client.subscribe<EventsSubscription>(request, {
        next: (result) => sink.next(result as EventsResult),
        error: (failure) => end(() => sink.error(failure)),
        complete,
      });
      return () => end(() => undefined);
    },
    failureOf: (failure) => {
      // A subscribe the gateway refused: its GraphQL errors.
      if (Array.isArray(failure)) {
        const first = failure[0] as GraphqlError | undefined;
        if (!first) return failure;
        const retryAfter = first.extensions?.retryAfterSeconds;
        if (first.extensions?.code === 'TOO_MANY_REQUESTS' && typeof retryAfter === 'number') {
          return new OtsRateLimitError(first.message, { code: 'TOO_MANY_REQUESTS', retryAfterSeconds: retryAfter });
        }
        return errorOf(first);
      }
      if (!isCloseEvent(failure)) return failure;
      const reason = `${failure.reason || 'The connection closed'} (WebSocket close ${failure.code})`;
      if (failure.code === 4401) return new OtsAuthenticationError(reason);
      if (failure.code === 4403) return new OtsPermissionError(reason);
      // An API key over plain HTTP in production, or a message graphql-ws's server could not read.
      if (failure.code === 4400) return new OtsRequestError(reason);
      // The gateway's close for a socket that took nothing more after SLOW_CONSUMER.
      if (failure.code === 4001) return new OtsApiError(reason, { code: 'SLOW_CONSUMER' });
      // 1013 (over the rate limit, too many sockets, or the key store out), 1001 (a restart),
      // a dropped or silent socket: back off and reconnect.
      return failure;
    },
    close: () => {
      stopped = true;
      for (const complete of [...open]) complete();
    },
  };
}

/** The most back-off between reconnections: a stream that keeps failing still tries every few seconds. */
const MAX_RECONNECT_ATTEMPT = 4;

/** The failures a reconnection cannot mend: the key, its scope, the account's access, or the request itself. */
function endsForGood(failure: OtsError): boolean {
  return failure instanceof OtsAuthenticationError || failure instanceof OtsPermissionError || failure instanceof OtsRequestError;
}

/**
 * The account's events, live, over GraphQL over SSE or WebSocket. A dropped connection, one silent for
 * `idleTimeoutMs`, a server restart, an outage of the events service (TEMPORARILY_UNAVAILABLE,
 * SERVICE_UNAVAILABLE) or a SLOW_CONSUMER ending is followed by a reconnection from the last cursor
 * handed out, so a consumer sees each event once and in order. A loop that falls `maxBufferedEvents`
 * behind has its connection closed on the spot and reopened from there once it has taken what the
 * stream held: it is the client that notices, since it reads everything the gateway sends, so the
 * gateway never sees a backlog to end with SLOW_CONSUMER. Authentication, permission and request
 * failures end the iteration with the matching `OtsError`; break out of the loop, or abort `signal`,
 * to close the stream.
 */
export class EventStream implements AsyncIterable<EventFieldsFragment> {
  private position: string | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly options: EventStreamOptions,
  ) {
    if (options.transport !== undefined && options.transport !== 'sse' && options.transport !== 'websocket') {
      throw new TypeError(`transport must be 'sse' or 'websocket' (got ${String(options.transport)})`);
    }
    const bound = options.maxBufferedEvents;
    if (bound !== undefined && !(Number.isInteger(bound) && bound >= 1)) throw new TypeError('maxBufferedEvents must be a whole number, at least 1');
    this.position = options.after;
  }

  /**
   * The stream's place: the cursor of the last event handed out, or, before the first, where it
   * started (`after`, or the feed's end it fixed when iteration began). Keep it to resume from there.
   */
  get cursor(): string | undefined {
    return this.position;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<EventFieldsFragment> {
    const { signal } = this.options;
    const connections = this.connections();
    const close = () => connections.close();
    signal?.addEventListener('abort', close, { once: true });
    let failures = 0;
    try {
      for (;;) {
        if (signal?.aborted) return;
        let delayMs: number;
        try {
          // "From now" is fixed before the stream opens: a stream cut before its first event then
          // resumes from there, not from a later "now" that would skip what committed meanwhile.
          this.position ??= await untilAborted(this.feedEnd(), signal);
          if (signal?.aborted) return;
          const variables: EventsSubscriptionVariables = { filter: this.options.filter, after: this.position };
          const results = new BoundedResults(
            connections.subscribe,
            { query: EventsDocument.toString(), variables },
            this.options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS,
          );
          let ending: GraphqlError | undefined;
          for await (const result of results) {
            // What arrived before the abort is not handed out: the cursor stays on the last event that was.
            if (signal?.aborted) return;
            ending = result.errors?.[0] as GraphqlError | undefined;
            if (ending) {
              // A key without `read`, revoked or of an account whose access was disabled: reconnecting cannot help.
              const failure = errorOf(ending);
              if (endsForGood(failure)) throw failure;
              // Fallen behind (SLOW_CONSUMER), or the events service out (TEMPORARILY_UNAVAILABLE,
              // SERVICE_UNAVAILABLE): carry on from the last event handed out.
              break;
            }
            const item = result.data!.events;
            this.position = item.cursor;
            failures = 0;
            yield item.event;
          }
          // SLOW_CONSUMER asks for a resumption at once; any other ending backs off as a failed connection does.
          // Fallen behind here: the loop has just taken all that was held and waits for more, so at once.
          if (results.fellBehind) {
            delayMs = 0;
          } else if (ending && ending.extensions?.code !== 'SLOW_CONSUMER') {
            delayMs = backoffMs(Math.min(failures, MAX_RECONNECT_ATTEMPT));
            failures += 1;
          } else {
            delayMs = backoffMs(0);
          }
        } catch (error) {
          const failure = error instanceof OtsError ? error : connections.failureOf(error);
          if (failure instanceof OtsError && endsForGood(failure)) throw failure;
          if (failure instanceof OtsError && failure.code === 'SLOW_CONSUMER') {
            delayMs = backoffMs(0);
          } else {
            delayMs = failure instanceof OtsRateLimitError ? failure.retryAfterSeconds * 1000 : backoffMs(Math.min(failures, MAX_RECONNECT_ATTEMPT));
            failures += 1;
          }
        }
        await sleep(delayMs, signal);
      }
    } finally {
      signal?.removeEventListener('abort', close);
      connections.close();
    }
  }

  private connections(): Connections {
    const idleTimeoutMs = this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    if (this.options.transport !== 'websocket') return sseConnections(this.transport, idleTimeoutMs);
    const WebSocketImpl = this.options.webSocketImpl ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (!WebSocketImpl) {
      throw new TypeError("The 'websocket' transport needs a WebSocket class, and this runtime has none (Node 20): pass webSocketImpl, e.g. the ws package's WebSocket");
    }
    return webSocketConnections(this.transport, WebSocketImpl, idleTimeoutMs);
  }

  /** The feed's current end, read without reading any event (its transport call retries as any other). */
  private async feedEnd(): Promise<string> {
    const answer = await this.transport.query<EventFeedEndQuery>(EventFeedEndDocument.toString(), {});
    const end = answer.listEvents.pageInfo.endCursor;
    if (!end) throw new OtsApiError('The service named no place in the feed to start the stream from');
    return end;
  }
}
