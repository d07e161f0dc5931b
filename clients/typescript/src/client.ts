import { OtsError, OtsPayloadError } from './errors.js';
import * as ops from './generated/operations.js';
import type { TypedDocumentString } from './generated/operations.js';
import { Paginated, type Connection } from './paging.js';
import { EventStream, type EventStreamOptions } from './stream.js';
import { backoffMs, Transport } from './transport.js';

export interface OtsClientOptions {
  /** An API key, `svc_live_...` (the console's Settings → API Keys, or `npm run admin -- key create`). */
  apiKey: string;
  /**
   * The gateway's address, without `/graphql`; a path it is served under is kept (`https://host/ots`
   * → `https://host/ots/graphql`).
   */
  baseUrl?: string;
  /**
   * How many times a failed attempt is retried (network error, timeout, 409 for the call's first
   * attempt still running, 429, 5xx, outage), with exponential back-off and jitter.
   */
  maxNetworkRetries?: number;
  /** How long one attempt may take. */
  timeoutMs?: number;
  /** A `fetch` to use instead of the global one (a proxy agent, a test double). */
  fetch?: typeof fetch;
}

export interface MutationOptions {
  /**
   * The `Idempotency-Key` to send, instead of a new one: an earlier call's (`OtsError.idempotencyKey`),
   * with the same arguments, to carry it on after it failed; the answer of what ran under it comes back.
   * Never a key of your own reused for new work: `orders.submit` without a `clientOrderId` derives one
   * from the key, and the order keeps it for good, so the same key a day later (when the service has
   * forgotten the key) gets the old order back, or DUPLICATE_CLIENT_ORDER_ID, and submits nothing.
   */
  idempotencyKey?: string;
}

export interface ListOptions<Filter> {
  filter?: Filter;
  /** Start after this cursor (a `Paginated.cursor` kept from before). */
  after?: string;
  /** Items per request, 1 to 200. */
  pageSize?: number;
}

type PayloadWithError = { error: { code: string; field: string | null; message: string } | null };

export type Order = ops.OrderFieldsFragment;
export type Strategy = ops.StrategyFieldsFragment;
export type Fill = ops.FillFieldsFragment;
export type Position = ops.PositionFieldsFragment;
export type Event = ops.EventFieldsFragment;
export type WebhookEndpoint = ops.WebhookEndpointFieldsFragment;
export type WebhookDelivery = ops.WebhookDeliveryFieldsFragment;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The `clientOrderId` of a submit that names none, derived from its Idempotency-Key: a call again
 * under the key sends the same body, which the gateway requires of a retry. `ots-` and 48 hex digits
 * of the key's SHA-256, within the contract's 1 to 64 characters of `[A-Za-z0-9._:-]`.
 */
async function clientOrderIdOf(idempotencyKey: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(idempotencyKey)));
  return `ots-${Array.from(digest.subarray(0, 24), (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** The payload's error thrown as `OtsPayloadError`; otherwise the payload. */
function unwrap<P extends PayloadWithError>(payload: P): P {
  if (payload.error) throw new OtsPayloadError(payload.error);
  return payload;
}

/**
 * The client of the Order Trading GraphQL Service (contract section 10). Every call is typed from the
 * published schema; every mutation is safe to retry and is retried for you; lists page by themselves.
 */
export class OtsClient {
  private readonly transport: Transport;
  private readonly maxNetworkRetries: number;

  constructor(options: OtsClientOptions) {
    if (!options.apiKey) throw new TypeError('OtsClient needs an apiKey');
    // A header value may not hold a line break or a control character, and fetch's own refusal quotes
    // the value: a key read with its trailing newline would reach the caller's logs in an error.
    if (!/^[\x21-\x7e]+$/.test(options.apiKey)) {
      throw new TypeError('OtsClient: the apiKey holds a space, a line break or another character no key has (was it read with a trailing newline?)');
    }
    const baseUrl = options.baseUrl ?? 'http://127.0.0.1:4000';
    // The endpoint itself given as the base (which once worked, by accident, when a base's path was
    // dropped) would be called at /graphql/graphql and answer 404 on every call: said at once instead.
    if (/\/graphql\/*$/.test(new URL(baseUrl).pathname)) {
      throw new TypeError(`OtsClient: baseUrl is the service's address, without /graphql (got ${baseUrl}); the client adds /graphql and /graphql/stream`);
    }
    this.maxNetworkRetries = options.maxNetworkRetries ?? 2;
    this.transport = new Transport({
      apiKey: options.apiKey,
      baseUrl,
      maxNetworkRetries: this.maxNetworkRetries,
      timeoutMs: options.timeoutMs ?? 10_000,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    });
  }

  private query<R, V extends object>(document: TypedDocumentString<R, V>, variables?: V): Promise<R> {
    return this.transport.query<R>(document.toString(), variables);
  }

  private mutate<R, V extends object>(document: TypedDocumentString<R, V>, variables: V, options: MutationOptions = {}): Promise<R> {
    return this.transport.mutate<R>(document.toString(), variables, options.idempotencyKey);
  }

  private paginate<Node, Filter>(options: ListOptions<Filter>, fetchPage: (first: number | undefined, after: string | undefined) => Promise<Connection<Node>>) {
    return new Paginated<Node>((after) => fetchPage(options.pageSize, after), options.after);
  }

  /** The key's account and the key itself. */
  async viewer() {
    return (await this.query(ops.ViewerDocument)).viewer;
  }

  readonly orders = {
    /**
     * Submits an order. Without a `clientOrderId` one is made for you from the call's Idempotency-Key,
     * so the client's retries never submit twice, and a later call with the same input under the key
     * alone (`{ idempotencyKey: error.idempotencyKey }`) sends the same order and gets the first answer.
     * An error it throws names the `clientOrderId` too, to find the order by.
     */
    submit: async (input: ops.SubmitOrderInput, options: MutationOptions = {}): Promise<Order> => {
      const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID();
      const withId = { ...input, clientOrderId: input.clientOrderId ?? (await clientOrderIdOf(idempotencyKey)) };
      try {
        return unwrap((await this.mutate(ops.SubmitOrderDocument, { input: withId }, { idempotencyKey })).submitOrder).orderSubmission!;
      } catch (error) {
        if (error instanceof OtsError) error.clientOrderId = withId.clientOrderId;
        throw error;
      }
    },
    cancel: async (id: string, options?: MutationOptions): Promise<Order> =>
      unwrap((await this.mutate(ops.CancelOrderDocument, { id }, options)).cancelOrderSubmission).orderSubmission!,
    /** Cancel/replace: returns the new order and the one it replaced. */
    replace: async (id: string, input: ops.ReplaceOrderSubmissionInput, options?: MutationOptions) => {
      const payload = unwrap((await this.mutate(ops.ReplaceOrderDocument, { id, input }, options)).replaceOrderSubmission);
      return { orderSubmission: payload.orderSubmission!, replacedOrderSubmission: payload.replacedOrderSubmission! };
    },
    /**
     * Cancels every open order matching the filter, calling as many times as `hasMore` asks. A call
     * an outage cut short answers the orders it did cancel with `hasMore` and TEMPORARILY_UNAVAILABLE:
     * they are kept, and the call is made again, under a new Idempotency-Key (the cut answer is kept
     * under its own, and would only be replayed). It throws only once more than `maxNetworkRetries`
     * calls in a row cancelled nothing; the error then lists what was cancelled
     * (`cancelledOrderSubmissions`).
     */
    cancelAll: async (filter?: ops.CancelOrderSubmissionsFilter) => {
      const cancelled: Order[] = [];
      try {
        for (let callsWithoutProgress = 0; ; ) {
          const payload = (await this.mutate(ops.CancelAllOrdersDocument, { filter })).cancelOrderSubmissions;
          cancelled.push(...payload.orderSubmissions);
          if (payload.error?.code === 'TEMPORARILY_UNAVAILABLE') {
            callsWithoutProgress = payload.orderSubmissions.length > 0 ? 0 : callsWithoutProgress + 1;
            if (callsWithoutProgress > this.maxNetworkRetries) throw new OtsPayloadError(payload.error);
            await sleep(backoffMs(callsWithoutProgress));
            continue;
          }
          unwrap(payload);
          if (!payload.hasMore) return { cancelledCount: cancelled.length, orderSubmissions: cancelled };
        }
      } catch (error) {
        if (error instanceof OtsError) error.cancelledOrderSubmissions = cancelled;
        throw error;
      }
    },
    /** The order, or null when it does not exist or is another account's. */
    get: async (id: string): Promise<Order | null> => (await this.query(ops.GetOrderDocument, { id })).orderSubmission,
    /** The account's orders, newest first unless `orderBy` says otherwise. */
    list: (options: ListOptions<ops.OrderSubmissionFilter> & { orderBy?: ops.OrderSubmissionOrder } = {}) =>
      this.paginate(options, async (first, after) =>
        (await this.query(ops.ListOrdersDocument, { filter: options.filter, orderBy: options.orderBy, first, after })).listOrderSubmissions,
      ),
    /**
     * The incremental sync: every order changed since `after` (or since `filter.updatedAfter`), oldest
     * change first by `updatedAt`, none missed. Keep `cursor` and start the next sync from it.
     */
    sync: (options: ListOptions<ops.OrderSubmissionFilter> = {}) =>
      this.paginate(options, async (first, after) =>
        (await this.query(ops.ListOrdersDocument, { filter: options.filter, orderBy: 'UPDATED_AT_ASC', first, after })).listOrderSubmissions,
      ),
  };

  readonly fills = {
    /** Records a venue's execution; the same `executionId` again returns the recorded fill. */
    record: async (input: ops.RecordFillInput, options?: MutationOptions): Promise<{ fill: Fill; orderSubmission: Order }> => {
      const payload = unwrap((await this.mutate(ops.RecordFillDocument, { input }, options)).recordFill);
      return { fill: payload.fill!, orderSubmission: payload.orderSubmission! };
    },
    get: async (id: string): Promise<Fill | null> => (await this.query(ops.GetFillDocument, { id })).fill,
    list: (options: ListOptions<ops.FillFilter> = {}) =>
      this.paginate(options, async (first, after) => (await this.query(ops.ListFillsDocument, { filter: options.filter, first, after })).listFills),
  };

  readonly strategies = {
    create: async (input: ops.CreateStrategyInput, options?: MutationOptions): Promise<Strategy> =>
      unwrap((await this.mutate(ops.CreateStrategyDocument, { input }, options)).createStrategy).strategy!,
    update: async (id: string, input: ops.UpdateStrategyInput, options?: MutationOptions): Promise<Strategy> =>
      unwrap((await this.mutate(ops.UpdateStrategyDocument, { id, input }, options)).updateStrategy).strategy!,
    pause: async (id: string, options?: MutationOptions): Promise<Strategy> =>
      unwrap((await this.mutate(ops.PauseStrategyDocument, { id }, options)).pauseStrategy).strategy!,
    resume: async (id: string, options?: MutationOptions): Promise<Strategy> =>
      unwrap((await this.mutate(ops.ResumeStrategyDocument, { id }, options)).resumeStrategy).strategy!,
    archive: async (id: string, options?: MutationOptions): Promise<Strategy> =>
      unwrap((await this.mutate(ops.ArchiveStrategyDocument, { id }, options)).archiveStrategy).strategy!,
    get: async (id: string): Promise<Strategy | null> => (await this.query(ops.GetStrategyDocument, { id })).strategy,
    list: (options: ListOptions<ops.StrategyFilter> = {}) =>
      this.paginate(options, async (first, after) => (await this.query(ops.ListStrategiesDocument, { filter: options.filter, first, after })).listStrategies),
    /** The strategy's positions by symbol; null when the strategy does not exist. */
    positions: async (id: string): Promise<Position[] | null> => (await this.query(ops.StrategyPositionsDocument, { id })).strategy?.positions ?? null,
  };

  readonly events = {
    /** The account's events of the last 30 days, oldest first; page on from a kept `cursor` to miss none. */
    list: (options: ListOptions<ops.EventFilter> = {}) =>
      this.paginate(options, async (first, after) => (await this.query(ops.ListEventsDocument, { filter: options.filter, first, after })).listEvents),
    get: async (id: string): Promise<Event | null> => (await this.query(ops.GetEventDocument, { id })).event,
    /**
     * The events as they happen (GraphQL over SSE), from `after` (a kept cursor) or from now (the
     * feed's end, read when iteration begins). It reconnects with back-off, outages of the service
     * included, and resumes after the last event it handed out, so each event comes once, in order,
     * across disconnects; `cursor` is the position to keep.
     */
    stream: (options: EventStreamOptions = {}) => new EventStream(this.transport, options),
  };

  readonly webhooks = {
    /** Creates an endpoint; `signingSecret` is shown this once: keep it for `verifyWebhook`. */
    create: async (input: ops.CreateWebhookEndpointInput, options?: MutationOptions) => {
      const payload = unwrap((await this.mutate(ops.CreateWebhookEndpointDocument, { input }, options)).createWebhookEndpoint);
      return { webhookEndpoint: payload.webhookEndpoint!, signingSecret: payload.signingSecret! };
    },
    update: async (id: string, input: ops.UpdateWebhookEndpointInput, options?: MutationOptions): Promise<WebhookEndpoint> =>
      unwrap((await this.mutate(ops.UpdateWebhookEndpointDocument, { id, input }, options)).updateWebhookEndpoint).webhookEndpoint!,
    disable: async (id: string, options?: MutationOptions): Promise<WebhookEndpoint> =>
      unwrap((await this.mutate(ops.DisableWebhookEndpointDocument, { id }, options)).disableWebhookEndpoint).webhookEndpoint!,
    enable: async (id: string, options?: MutationOptions): Promise<WebhookEndpoint> =>
      unwrap((await this.mutate(ops.EnableWebhookEndpointDocument, { id }, options)).enableWebhookEndpoint).webhookEndpoint!,
    delete: async (id: string, options?: MutationOptions): Promise<WebhookEndpoint> =>
      unwrap((await this.mutate(ops.DeleteWebhookEndpointDocument, { id }, options)).deleteWebhookEndpoint).webhookEndpoint!,
    /** A new signing secret; the old one keeps signing for `graceSeconds` (default a day). */
    rotateSecret: async (id: string, graceSeconds?: number, options?: MutationOptions) => {
      const payload = unwrap((await this.mutate(ops.RotateWebhookSigningSecretDocument, { id, graceSeconds }, options)).rotateWebhookSigningSecret);
      return { webhookEndpoint: payload.webhookEndpoint!, signingSecret: payload.signingSecret! };
    },
    list: async (): Promise<WebhookEndpoint[]> => (await this.query(ops.ListWebhookEndpointsDocument)).listWebhookEndpoints,
    get: async (id: string): Promise<WebhookEndpoint | null> => (await this.query(ops.GetWebhookEndpointDocument, { id })).webhookEndpoint,
    /** The endpoint's delivery attempts, newest first (none for an endpoint that is not the account's). */
    deliveries: (id: string, options: Omit<ListOptions<never>, 'filter'> = {}): Paginated<WebhookDelivery> =>
      this.paginate(options, async (first, after) => {
        const endpoint = (await this.query(ops.ListWebhookDeliveriesDocument, { id, first, after })).webhookEndpoint;
        return endpoint?.deliveries ?? { edges: [], pageInfo: { hasNextPage: false, endCursor: after ?? null } };
      }),
    redeliver: async (endpointId: string, eventId: string, options?: MutationOptions): Promise<Event> =>
      unwrap((await this.mutate(ops.RedeliverEventDocument, { endpointId, eventId }, options)).redeliverEvent).event!,
  };
}
