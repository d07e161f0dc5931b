import type { OrderFieldsFragment } from './generated/operations.js';

/**
 * Every failure the client throws is an `OtsError`; its subclasses say what kind (contract section 10),
 * so a bot can tell "retry later" from "fix the request" from "this key will never work".
 */
export class OtsError extends Error {
  /** The HTTP status of the answer, when there was one. */
  readonly status: number | undefined;
  /** `extensions.code` of a top-level GraphQL error, or the payload error's code. */
  readonly code: string | undefined;
  /** The gateway's request id (`x-request-id`), to quote when asking for help. */
  readonly requestId: string | undefined;
  /**
   * A mutation's `Idempotency-Key`, the one all its attempts carried. Pass it back as the call's
   * `idempotencyKey` option, with the same arguments, to carry on: the answer of whatever ran under
   * it comes back, and nothing runs twice. Set on the errors of a mutation that did not get its answer.
   * An outage the gateway replayed under it (the mutation may have run) comes back the same: check
   * whether it ran, and if not call again under a new key.
   */
  idempotencyKey: string | undefined;
  /** The `clientOrderId` that `orders.submit` sent (the caller's, or the one it made from the key): the order can be found by it. */
  clientOrderId: string | undefined;
  /** The orders that `orders.cancelAll` had cancelled before it failed: cancelled for good, though it threw. */
  cancelledOrderSubmissions: OrderFieldsFragment[] | undefined;

  constructor(message: string, options: { status?: number; code?: string; requestId?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.code = options.code;
    this.requestId = options.requestId;
  }
}

/** No key, or a key that is malformed, unknown, revoked, expired or used from an address it does not allow. */
export class OtsAuthenticationError extends OtsError {}

/** The account's API access is disabled (403), or the key lacks the scope an operation needs. */
export class OtsPermissionError extends OtsError {
  /** The missing scope, e.g. `orders:write`; undefined for a 403. */
  readonly requiredScope: string | undefined;

  constructor(message: string, options: ConstructorParameters<typeof OtsError>[1] & { requiredScope?: string } = {}) {
    super(message, options);
    this.requiredScope = options.requiredScope;
  }
}

/** Still over the key's rate limit after every retry the client was allowed. */
export class OtsRateLimitError extends OtsError {
  readonly retryAfterSeconds: number;

  constructor(message: string, options: ConstructorParameters<typeof OtsError>[1] & { retryAfterSeconds: number }) {
    super(message, options);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * The mutation ran and refused: `code` is one of the contract's payload error codes
 * (`VALIDATION_FAILED`, `NOT_FOUND`, `DUPLICATE_CLIENT_ORDER_ID`, ...), `field` names the input at fault.
 */
export class OtsPayloadError extends OtsError {
  override readonly code: string;
  readonly field: string | undefined;

  constructor(error: { code: string; field?: string | null; message: string }, requestId?: string) {
    super(error.message, { code: error.code, status: 200, requestId });
    this.code = error.code;
    this.field = error.field ?? undefined;
  }
}

/** The request itself is wrong (400, 413, 415, 422, or a top-level `BAD_USER_INPUT`): retrying it as it is cannot help. */
export class OtsRequestError extends OtsError {}

/** The service could not be reached, or did not answer in time, after every retry. */
export class OtsConnectionError extends OtsError {}

/** Anything else the service answered with: a dependency outage after every retry, or a fault on its side. */
export class OtsApiError extends OtsError {}
