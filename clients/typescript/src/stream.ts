import { createClient, NetworkError, type Client, type ExecutionResult, type RequestParams } from 'graphql-sse';
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

export interface EventStreamOptions {
  filter?: EventFilter;
  /** Resume after this cursor (an `EventStream.cursor` or a `listEvents` cursor kept from before); absent: from the feed's end when the stream starts. */
  after?: string;
  /**
   * How long a connection may stay silent before it is taken for dead and replaced (default 25 s).
   * The gateway sends a heartbeat at least every 10 s, so only a connection that is gone (a half-open
   * TCP connection, a proxy that stopped passing bytes) is silent that long.
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

/**
 * One connection's results, in order, holding at most `bound` that the consumer has not taken.
 * graphql-sse reads a response as fast as it comes, whatever the consumer does (its own `iterate`
 * queues without limit), and offers no way to pull: so a result that finds `bound` held is dropped
 * with the connection, and the results end once the consumer has taken those held, `fellBehind`
 * set. The caller resumes after the last of them, as after the gateway's SLOW_CONSUMER.
 */
class BoundedResults<Data> implements AsyncIterable<ExecutionResult<Data, unknown>> {
  fellBehind = false;

  constructor(
    private readonly client: Client,
    private readonly request: RequestParams,
    private readonly bound: number,
  ) {}

  async *[Symbol.asyncIterator](): AsyncIterator<ExecutionResult<Data, unknown>> {
    const held: ExecutionResult<Data, unknown>[] = [];
    let end: { failure?: unknown } | undefined;
    let wake: (() => void) | undefined;
    const unsubscribe = this.client.subscribe<Data>(this.request, {
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

/** The most back-off between reconnections: a stream that keeps failing still tries every few seconds. */
const MAX_RECONNECT_ATTEMPT = 4;

/** The failures a reconnection cannot mend: the key, its scope, the account's access, or the request itself. */
function endsForGood(failure: OtsError): boolean {
  return failure instanceof OtsAuthenticationError || failure instanceof OtsPermissionError || failure instanceof OtsRequestError;
}

/**
 * The account's events, live, over GraphQL over SSE. A dropped connection, one silent for
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
    const client = createClient({
      url: this.transport.streamUrl,
      headers: { 'x-api-key': this.transport.apiKey },
      // Reconnection is done here, so that each one asks from the latest cursor.
      retryAttempts: 0,
      fetchFn: failingWhenSilent(this.transport.fetch, this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS),
    });
    // graphql-sse's subscribe takes no signal: disposing of the client aborts its connection, and the
    // subscription completes.
    const dispose = () => client.dispose();
    signal?.addEventListener('abort', dispose, { once: true });
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
          const results = new BoundedResults<EventsSubscription>(
            client,
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
          if (error instanceof OtsError && endsForGood(error)) throw error;
          const status = error instanceof NetworkError ? error.response?.status : undefined;
          if (status === 401) throw new OtsAuthenticationError('Invalid or expired API key', { status });
          if (status === 403) throw new OtsPermissionError('API access is not enabled for this account', { status });
          if (status === 400 || status === 415 || status === 422) throw new OtsRequestError(`The stream was refused (HTTP ${status})`, { status });
          const response = error instanceof NetworkError ? (error.response as Response | undefined) : undefined;
          if (error instanceof OtsRateLimitError) delayMs = error.retryAfterSeconds * 1000;
          else if (status === 429 && response?.headers) delayMs = retryAfterSeconds(response) * 1000;
          else delayMs = backoffMs(Math.min(failures, MAX_RECONNECT_ATTEMPT));
          failures += 1;
        }
        await sleep(delayMs, signal);
      }
    } finally {
      signal?.removeEventListener('abort', dispose);
      client.dispose();
    }
  }

  /** The feed's current end, read without reading any event (its transport call retries as any other). */
  private async feedEnd(): Promise<string> {
    const answer = await this.transport.query<EventFeedEndQuery>(EventFeedEndDocument.toString(), {});
    const end = answer.listEvents.pageInfo.endCursor;
    if (!end) throw new OtsApiError('The service named no place in the feed to start the stream from');
    return end;
  }
}
