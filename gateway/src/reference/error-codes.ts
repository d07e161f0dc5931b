import type { PayloadErrorCode } from '@ots/shared/contracts/payload-errors';

export interface ErrorCodeDoc {
  /** Where the code appears: a mutation payload's `error.code`, a top-level error's `extensions.code`, an HTTP status, or a stream's last message or WebSocket close code. */
  where: 'payload' | 'top-level' | 'http' | 'stream';
  when: string;
  todo: string;
}

/** Every payload error code (the type makes a missing one a compile error), with when it happens and what to do. */
export const PAYLOAD_ERROR_CODES: Record<PayloadErrorCode, ErrorCodeDoc> = {
  VALIDATION_FAILED: {
    where: 'payload',
    when: 'A well-formed value breaks a rule: a zero quantity, a limit price on a MARKET order, a symbol of bad characters, a name too long. `field` names the input (e.g. `quantity`).',
    todo: 'Fix the named field; retrying the same input gives the same answer.',
  },
  NOT_FOUND: {
    where: 'payload',
    when: 'The id does not exist, or belongs to another account (the two are indistinguishable).',
    todo: 'Check the id and that the key is of the account that owns it.',
  },
  STRATEGY_NOT_ACTIVE: {
    where: 'payload',
    when: 'An order names a strategy that is PAUSED or ARCHIVED.',
    todo: 'Resume the strategy (resumeStrategy) or submit under an ACTIVE one.',
  },
  DUPLICATE_CLIENT_ORDER_ID: {
    where: 'payload',
    when: 'The account already used this clientOrderId for an order with different fields. (The same fields again return the existing order, without error: that is a safe retry.)',
    todo: 'Use a new clientOrderId for a new order; look the old one up with listOrderSubmissions(filter: {clientOrderId}).',
  },
  ORDER_NOT_CANCELLABLE: {
    where: 'payload',
    when: 'The order is FILLED or REPLACED (a CANCELLED order is returned as it is, without error).',
    todo: 'Nothing to cancel; read the order to see its state.',
  },
  ORDER_NOT_REPLACEABLE: {
    where: 'payload',
    when: 'The order is no longer open (FILLED, CANCELLED or REPLACED).',
    todo: 'Read the order; submit a new one if you still want the position.',
  },
  ORDER_NOT_FILLABLE: {
    where: 'payload',
    when: 'recordFill names an order that is FILLED, or CANCELLED / REPLACED with an executedAt after the cancel or replace took effect (a late fill executed at or before cancelledAt / replacedAt is recorded).',
    todo: "Check the venue report against the order: send the venue's executedAt with a late fill; a fill executed after a replace belongs to the order that replaced it.",
  },
  FILL_EXCEEDS_REMAINING: {
    where: 'payload',
    when: 'The fill quantity is more than the order has left to fill: quantity − filledQuantity, which a CANCELLED or REPLACED order still has for a late fill although its remainingQuantity is 0.',
    todo: 'Check the venue report; nothing was recorded.',
  },
  DUPLICATE_EXECUTION_ID: {
    where: 'payload',
    when: 'This executionId was already recorded with different details. (The same details again return the recorded fill, applied once.)',
    todo: 'Each venue execution has one executionId; do not reuse one for another fill.',
  },
  STRATEGY_NAME_TAKEN: {
    where: 'payload',
    when: 'Another non-archived strategy of the account has this name, whatever the case.',
    todo: 'Choose another name, or archive the other strategy first.',
  },
  INVALID_STATUS_TRANSITION: {
    where: 'payload',
    when: 'The strategy cannot go to that status from its own (an ARCHIVED strategy is final).',
    todo: 'Read the strategy; create a new one instead of reviving an archived one.',
  },
  TEMPORARILY_UNAVAILABLE: {
    where: 'payload',
    when: 'A service the mutation depends on did not answer. Nothing was changed, or the change will complete by itself. The same code comes as a top-level error (`extensions.code`) on a query whose service could not reach its database, and as the last message of an `events` stream whose read of the feed failed, with `extensions.cursor` to resume from. When the key itself cannot be checked (the key store did not answer), POST /graphql answers HTTP 503 with `Retry-After` and this code on each root field, and a WebSocket subscribe is refused with it (the socket stays open).',
    todo: 'Retry after a short back-off with the same clientOrderId / executionId / Idempotency-Key: a retry is always safe. @ots/client does this for you.',
  },
  WEBHOOK_ENDPOINT_LIMIT: {
    where: 'payload',
    when: 'The account already has 16 webhook endpoints.',
    todo: 'Delete an endpoint you no longer use; one endpoint can receive every event type.',
  },
};

/** Top-level `extensions.code` values and HTTP answers a client can meet. */
export const OTHER_ERROR_CODES: Record<string, ErrorCodeDoc> = {
  UNAUTHENTICATED: {
    where: 'top-level',
    when: 'No X-API-Key header (or an empty one): HTTP 200, `data: null` and one error per root field (Variant A).',
    todo: 'Send the key in the X-API-Key header (not Authorization).',
  },
  FORBIDDEN: {
    where: 'top-level',
    when: 'The key lacks the scope a root field needs; `extensions.requiredScope` names it. Nothing ran.',
    todo: 'Use a key with that scope (Settings → API Keys, or `npm run admin -- key update KEY_ID --scopes ...`).',
  },
  BAD_USER_INPUT: {
    where: 'top-level',
    when: 'A value its scalar does not accept (a Decimal that does not parse or is a JSON number, a malformed DateTime), or `first` outside 1–200. `extensions.argumentName` names the argument.',
    todo: 'Fix the value: decimals are strings ("10.5"), instants ISO-8601 UTC.',
  },
  GRAPHQL_PARSE_FAILED: {
    where: 'top-level',
    when: 'The document is not valid GraphQL syntax, or is over 2,000 tokens (HTTP 400).',
    todo: 'Fix the document; select less if it is too long.',
  },
  GRAPHQL_VALIDATION_FAILED: {
    where: 'top-level',
    when: 'The document does not match the schema (an unknown field, a missing argument, a wrong variable type), or holds two anonymous operations (HTTP 400).',
    todo: 'Check the field against the reference; send one operation per request.',
  },
  BAD_REQUEST: {
    where: 'top-level',
    when: 'The request itself is wrong: an operationName the document does not define, a subscription sent to POST /graphql, a body without "query" (HTTP 400).',
    todo: 'Send one operation per request; subscriptions go to /graphql/stream or /graphql/ws.',
  },
  PERSISTED_QUERY_NOT_SUPPORTED: {
    where: 'top-level',
    when: 'The request asks for an automatic persisted query (a `persistedQuery` extension); HTTP 400.',
    todo: 'Send the whole document in "query" (turn persisted queries off in your client, e.g. Apollo Client\'s persisted-queries link).',
  },
  QUERY_TOO_COMPLEX: {
    where: 'top-level',
    when: 'The document is over the depth (10), alias (15) or cost limit; checked before anything runs (HTTP 400).',
    todo: 'Select less, or page with a smaller `first`.',
  },
  SERVICE_UNAVAILABLE: {
    where: 'top-level',
    when: 'The service owning these fields did not answer; the fields of the others are still in `data`. A mutation it received may still have run.',
    todo: 'Retry after a back-off; mutations with the same Idempotency-Key or natural id are safe to retry. A retry answered this again with `Idempotent-Replayed: true` is the kept answer of a mutation the service received: it may have run, and the key will only replay it. Check, and if it did not run, send it under a new key.',
  },
  GATEWAY_TIMEOUT: {
    where: 'top-level',
    when: 'No answer within the gateway timeout (10 s); HTTP 504. A mutation may still be running.',
    todo: 'Retry after a back-off with the same Idempotency-Key: 409 while the mutation still runs, then its answer.',
  },
  SLOW_CONSUMER: {
    where: 'stream',
    when: 'The `events` subscription ended: its consumer fell more than 1,000 events behind and was not catching up. `extensions.cursor` is the last event it was sent. A WebSocket that takes nothing more within 2 s is closed instead, with code 4001 and a reason naming SLOW_CONSUMER: the last cursor it received is the one.',
    todo: 'Read faster (or hand events to a queue), then subscribe again with `after` set to that cursor. @ots/client does this for you.',
  },
  TOO_MANY_STREAMS: {
    where: 'stream',
    when: 'An 11th open stream of one key (HTTP 429 on POST /graphql/stream, this error on a WebSocket subscribe).',
    todo: 'Close a stream first; one stream with a filter usually serves a bot.',
  },
  TOO_MANY_REQUESTS: {
    where: 'stream',
    when: "A WebSocket subscribe over the key's rate limit (each subscribe takes a request of it, as each POST /graphql/stream does); `extensions.retryAfterSeconds` says when one is free again. The socket stays open.",
    todo: 'Subscribe again after retryAfterSeconds; keep one subscription open rather than opening and closing them.',
  },
  '4400': { where: 'stream', when: 'WebSocket close code: an API key over plain HTTP in production.', todo: 'Connect with wss://.' },
  '4401': { where: 'stream', when: 'WebSocket close code: the key is invalid, revoked or expired (checked at connect and at every subscribe).', todo: 'Create or roll a key; connect again.' },
  '4403': { where: 'stream', when: "WebSocket close code: the account's API access is disabled.", todo: 'An owner enables API access for the account.' },
  '1013': {
    where: 'stream',
    when: 'WebSocket close code (Try Again Later): over the rate limit at connect, more than 20 WebSocket connections of one key on a gateway (the reason says which), or the key could not be checked at connect because the key store did not answer.',
    todo: "Reconnect after a back-off (graphql-ws's client does this for you); share one connection among subscriptions.",
  },
  INTERNAL_SERVER_ERROR: {
    where: 'top-level',
    when: 'A fault of ours. The message is masked; the response header x-request-id identifies the request in our logs.',
    todo: 'Retry later; report the x-request-id if it persists.',
  },
  '401': {
    where: 'http',
    when: '`{"detail": "Invalid or expired API key"}`: the key is malformed, unknown, revoked, expired, or used from an address it does not allow.',
    todo: 'Create or roll a key; check its allowed addresses.',
  },
  '403': { where: 'http', when: '`{"detail": "API access is not enabled for this account"}`.', todo: 'An owner enables API access for the account.' },
  '409': {
    where: 'http',
    when: '`{"detail": "A request with this Idempotency-Key is in progress"}`: the first request with this key has not answered yet (after a 504 too, until the mutation ends).',
    todo: 'Retry after a short back-off; you will get its answer.',
  },
  '400': {
    where: 'http',
    when: '`{"detail": "…"}` for a body that is not JSON or a JSON array (batching is not supported), and a GraphQL error for a request mistake (see BAD_REQUEST).',
    todo: 'Send one JSON object with `query` per request.',
  },
  '406': {
    where: 'http',
    when: '`{"detail": "The stream is sent as text/event-stream: send Accept: text/event-stream"}`: POST /graphql/stream without an Accept header that takes text/event-stream.',
    todo: 'Send `accept: text/event-stream` (graphql-sse and @ots/client do).',
  },
  '413': { where: 'http', when: 'The body is over 100 KiB.', todo: 'Send less per request.' },
  '415': { where: 'http', when: 'The body is not `application/json`.', todo: 'Send `content-type: application/json`.' },
  '422': {
    where: 'http',
    when: '`{"detail": "Idempotency-Key was used with a different request"}`: the key was used in the last 24 hours with another body.',
    todo: 'Make a new key for each distinct call; reuse a key only to retry the same call.',
  },
  '429': {
    where: 'http',
    when: 'Over the key rate limit (50 requests/s, bursts of 100), or too many failed authentications from the address. `Retry-After` says how many seconds to wait; `RateLimit` and `RateLimit-Policy` on every answer to a valid key show where you stand.',
    todo: 'Wait Retry-After seconds, then retry. @ots/client does this for you.',
  },
};
