import {
  OtsApiError,
  OtsAuthenticationError,
  OtsConnectionError,
  OtsError,
  OtsPayloadError,
  OtsPermissionError,
  OtsRateLimitError,
  OtsRequestError,
} from './errors.js';

type PayloadErrorShape = { code: string; field?: string | null; message: string };

export interface TransportOptions {
  apiKey: string;
  baseUrl: string;
  maxNetworkRetries: number;
  timeoutMs: number;
  fetch: typeof fetch;
}

export interface GraphqlError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; requiredScope?: string; retryAfterSeconds?: number };
}

interface GraphqlResponse {
  data?: Record<string, unknown> | null;
  errors?: GraphqlError[];
  detail?: string;
}

/** The first and the longest pause between attempts, before jitter. */
const INITIAL_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;
const REQUEST_ERROR_CODES = new Set(['BAD_USER_INPUT', 'BAD_REQUEST', 'GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED', 'QUERY_TOO_COMPLEX']);
/**
 * Top-level errors of an outage, a dependency's (TEMPORARILY_UNAVAILABLE) or a whole service's
 * (SERVICE_UNAVAILABLE). A mutation's retry carries the same Idempotency-Key: when nothing ran the
 * gateway kept no answer and the retry runs; when part of it ran, or the service got it and did not
 * answer, the retry is answered with that first answer (`Idempotent-Replayed: true`) and nothing runs
 * twice.
 */
const OUTAGE_CODES = new Set(['TEMPORARILY_UNAVAILABLE', 'SERVICE_UNAVAILABLE']);

/** Exponential back-off with jitter: between half and all of 0.5 s, 1 s, 2 s, ... up to 8 s. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_DELAY_MS, INITIAL_DELAY_MS * 2 ** attempt);
  return ceiling / 2 + random() * (ceiling / 2);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `{baseUrl}{path}`: the path is appended to the base URL's own, so that a gateway served under a
 * prefix (`https://host/ots/`) is reached there; `new URL('/graphql', base)` would drop the prefix.
 */
function endpointUrl(baseUrl: string, path: string): string {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  return url.toString();
}

/** Thrown inside an attempt: `retryable` failures are tried again while attempts remain. */
class AttemptFailure {
  constructor(
    readonly error: OtsError,
    readonly retryable: boolean,
    readonly minimumDelayMs = 0,
  ) {}
}

export function retryAfterSeconds(response: Pick<Response, 'headers'>): number {
  const header = response.headers.get('retry-after');
  const seconds = header === null ? NaN : Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = header === null ? NaN : Date.parse(header);
  return Number.isFinite(date) ? Math.max(0, (date - Date.now()) / 1000) : 1;
}

/**
 * The class of a top-level GraphQL error, by its `extensions.code`, whether it came with an answer of
 * POST /graphql or ended an event stream: a missing scope is an `OtsPermissionError` naming it.
 */
export function errorOf(error: GraphqlError, context: { status?: number; requestId?: string } = {}): OtsError {
  const code = error.extensions?.code;
  const options = { ...context, code };
  if (code === 'UNAUTHENTICATED') return new OtsAuthenticationError(error.message, options);
  if (code === 'FORBIDDEN') return new OtsPermissionError(error.message, { ...options, requiredScope: error.extensions?.requiredScope });
  if (code !== undefined && REQUEST_ERROR_CODES.has(code)) return new OtsRequestError(error.message, options);
  return new OtsApiError(error.message, options);
}

/**
 * A payload of a `TEMPORARILY_UNAVAILABLE` error and nothing else, on any root field: nothing changed,
 * or it will complete; a retry under the same key is safe. A payload that carries results beside the
 * error (cancel-all's orders cancelled before the outage) is an answer the gateway keeps: a retry
 * under its key would only replay it, so it goes back to the caller, who calls again.
 */
function unavailablePayload(data: Record<string, unknown> | null | undefined): PayloadErrorShape | undefined {
  for (const value of Object.values(data ?? {})) {
    if (typeof value !== 'object' || value === null) continue;
    const { error, ...results } = value as { error?: PayloadErrorShape | null };
    if (error?.code === 'TEMPORARILY_UNAVAILABLE' && Object.values(results).every((result) => result === null)) return error;
  }
  return undefined;
}

/**
 * Sends one GraphQL operation, with the retries of contract section 10: a network error, a timeout,
 * 409 (the same Idempotency-Key's first attempt still running), 429 (after `Retry-After`), 5xx,
 * TEMPORARILY_UNAVAILABLE and SERVICE_UNAVAILABLE (a service down) are tried again up to
 * `maxNetworkRetries` times, with back-off. A mutation carries one `Idempotency-Key` on every attempt,
 * so a retry whose first attempt did run is answered with that attempt's answer and runs nothing
 * again; such a replayed answer is never tried again, since the key would only replay it.
 */
export class Transport {
  // An ES private field, not TypeScript's `private`: a bot that logs its client (console.log,
  // JSON.stringify, a logger's object) would otherwise write the API key with it.
  readonly #options: TransportOptions;

  constructor(options: TransportOptions) {
    this.#options = options;
  }

  get graphqlUrl(): string {
    return endpointUrl(this.#options.baseUrl, '/graphql');
  }

  /** The GraphQL-over-SSE endpoint of the event stream. */
  get streamUrl(): string {
    return endpointUrl(this.#options.baseUrl, '/graphql/stream');
  }

  /** The GraphQL-over-WebSocket endpoint of the event stream, ws: or wss: as the base URL is http: or https:. */
  get webSocketUrl(): string {
    const url = new URL(endpointUrl(this.#options.baseUrl, '/graphql/ws'));
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return url.toString();
  }

  get apiKey(): string {
    return this.#options.apiKey;
  }

  get fetch(): typeof fetch {
    return this.#options.fetch;
  }

  query<Result>(query: string, variables: object | undefined): Promise<Result> {
    return this.send<Result>(query, variables, undefined);
  }

  /**
   * A mutation under `idempotencyKey` (a new one when absent). An error thrown carries the key, so
   * that the caller can send the same mutation again under it and get the first one's answer.
   */
  async mutate<Result>(query: string, variables: object | undefined, idempotencyKey: string = crypto.randomUUID()): Promise<Result> {
    try {
      return await this.send<Result>(query, variables, idempotencyKey);
    } catch (error) {
      if (error instanceof OtsError) error.idempotencyKey = idempotencyKey;
      throw error;
    }
  }

  private async send<Result>(query: string, variables: object | undefined, idempotencyKey: string | undefined): Promise<Result> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': this.#options.apiKey };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    const body = JSON.stringify({ query, variables: variables ?? {} });
    let attempt = 0;
    for (;;) {
      try {
        return (await this.attempt(headers, body)) as Result;
      } catch (failure) {
        if (!(failure instanceof AttemptFailure)) throw failure;
        if (!failure.retryable || attempt >= this.#options.maxNetworkRetries) throw failure.error;
        await sleep(Math.max(failure.minimumDelayMs, backoffMs(attempt)));
        attempt += 1;
      }
    }
  }

  private async attempt(headers: Record<string, string>, body: string): Promise<Record<string, unknown>> {
    let response: Response;
    let parsed: GraphqlResponse | undefined;
    try {
      response = await this.#options.fetch(this.graphqlUrl, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.#options.timeoutMs) });
      const text = await response.text();
      try {
        parsed = JSON.parse(text) as GraphqlResponse;
      } catch {
        parsed = undefined;
      }
    } catch (error) {
      const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
      const message = timedOut ? `No answer from ${this.graphqlUrl} within ${this.#options.timeoutMs} ms` : `${this.graphqlUrl} could not be reached`;
      throw new AttemptFailure(new OtsConnectionError(message, { cause: error }), true);
    }
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const status = response.status;
    const detail = parsed?.detail ?? parsed?.errors?.[0]?.message ?? `HTTP ${status}`;
    const context = { status, requestId, code: parsed?.errors?.[0]?.extensions?.code };
    const replayed = response.headers.get('idempotent-replayed') === 'true';
    // A replayed failure is the answer the gateway kept for the key, which every retry under it gets
    // again: for an outage, the service got the mutation and did not answer, so it may have run.
    const fail = (error: OtsError, retryable: boolean) => {
      if (!replayed || !retryable) return new AttemptFailure(error, retryable);
      error.message = `${error.message} (the answer kept for this Idempotency-Key: the mutation may have run; check whether it did, and call again under a new key if not)`;
      return new AttemptFailure(error, false);
    };

    if (status === 429) {
      const seconds = retryAfterSeconds(response);
      // A little jitter on top of Retry-After, so a burst held back together does not return together.
      throw new AttemptFailure(new OtsRateLimitError(detail, { ...context, retryAfterSeconds: seconds }), true, seconds * 1000 + Math.random() * 250);
    }
    if (status === 401) throw new AttemptFailure(new OtsAuthenticationError(detail, context), false);
    if (status === 403) throw new AttemptFailure(new OtsPermissionError(detail, context), false);
    if (status === 409) throw new AttemptFailure(new OtsApiError(detail, context), true);
    if (status >= 500) throw fail(new OtsApiError(detail, context), true);
    if (status >= 400) throw new AttemptFailure(new OtsRequestError(detail, context), false);
    if (!parsed) throw fail(new OtsApiError('The answer was not JSON', context), true);

    const first = parsed.errors?.[0];
    if (first) throw fail(errorOf(first, { status, requestId }), OUTAGE_CODES.has(first.extensions?.code ?? ''));
    const unavailable = unavailablePayload(parsed.data);
    if (unavailable) throw fail(new OtsPayloadError(unavailable, requestId), true);
    return parsed.data ?? {};
  }
}
