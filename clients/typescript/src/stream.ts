import { createClient, NetworkError } from 'graphql-sse';
import { OtsAuthenticationError, OtsError, OtsPermissionError, OtsRequestError } from './errors.js';
import { EventsDocument, type EventFieldsFragment, type EventFilter, type EventsSubscription, type EventsSubscriptionVariables } from './generated/operations.js';
import { backoffMs, errorOf, retryAfterSeconds, type GraphqlError, type Transport } from './transport.js';

export interface EventStreamOptions {
  filter?: EventFilter;
  /** Resume after this cursor (an `EventStream.cursor` or a `listEvents` cursor kept from before); absent: from now. */
  after?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The most back-off between reconnections: a stream that keeps failing still tries every few seconds. */
const MAX_RECONNECT_ATTEMPT = 4;

/**
 * The account's events, live, over GraphQL over SSE. A dropped connection, a server restart or a
 * SLOW_CONSUMER ending is followed by a reconnection from the last cursor handed out, so a consumer
 * sees each event once and in order. Authentication and permission failures end the iteration with
 * the matching `OtsError`; break out of the loop to close the stream.
 */
export class EventStream implements AsyncIterable<EventFieldsFragment> {
  private position: string | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly options: EventStreamOptions,
  ) {
    this.position = options.after;
  }

  /** The cursor of the last event handed out: keep it to resume from there after a restart. */
  get cursor(): string | undefined {
    return this.position;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<EventFieldsFragment> {
    const client = createClient({
      url: this.transport.streamUrl,
      headers: { 'x-api-key': this.transport.apiKey },
      // Reconnection is done here, so that each one asks from the latest cursor.
      retryAttempts: 0,
      fetchFn: this.transport.fetch,
    });
    let failures = 0;
    try {
      for (;;) {
        let delayMs: number;
        try {
          const variables: EventsSubscriptionVariables = { filter: this.options.filter, after: this.position };
          const results = client.iterate<EventsSubscription>({ query: EventsDocument.toString(), variables });
          for await (const result of results) {
            const error = result.errors?.[0] as GraphqlError | undefined;
            if (error) {
              // The stream ended for a consumer that fell behind: carry on from the last event handed out.
              if (error.extensions?.code === 'SLOW_CONSUMER') break;
              // A key without `read`, revoked or of an account whose access was disabled: reconnecting cannot help.
              throw errorOf(error);
            }
            const item = result.data!.events;
            this.position = item.cursor;
            failures = 0;
            yield item.event;
          }
          delayMs = backoffMs(0);
        } catch (error) {
          if (error instanceof OtsError) throw error;
          const status = error instanceof NetworkError ? error.response?.status : undefined;
          if (status === 401) throw new OtsAuthenticationError('Invalid or expired API key', { status });
          if (status === 403) throw new OtsPermissionError('API access is not enabled for this account', { status });
          if (status === 400 || status === 415 || status === 422) throw new OtsRequestError(`The stream was refused (HTTP ${status})`, { status });
          const response = error instanceof NetworkError ? (error.response as Response | undefined) : undefined;
          delayMs = status === 429 && response?.headers ? retryAfterSeconds(response) * 1000 : backoffMs(Math.min(failures, MAX_RECONNECT_ATTEMPT));
          failures += 1;
        }
        await sleep(delayMs);
      }
    } finally {
      client.dispose();
    }
  }
}
