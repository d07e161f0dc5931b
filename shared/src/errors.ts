import { GraphQLError } from 'graphql';

/** Payload-level error codes of contract section 4; nothing else may appear in `PayloadError.code`. */
export type PayloadErrorCode =
  | 'VALIDATION_FAILED'
  | 'NOT_FOUND'
  | 'STRATEGY_NOT_ACTIVE'
  | 'DUPLICATE_CLIENT_ORDER_ID'
  | 'ORDER_NOT_CANCELLABLE'
  | 'ORDER_NOT_REPLACEABLE'
  | 'ORDER_NOT_FILLABLE'
  | 'FILL_EXCEEDS_REMAINING'
  | 'DUPLICATE_EXECUTION_ID'
  | 'STRATEGY_NAME_TAKEN'
  | 'INVALID_STATUS_TRANSITION'
  | 'TEMPORARILY_UNAVAILABLE'
  | 'WEBHOOK_ENDPOINT_LIMIT';

export interface PayloadError {
  code: PayloadErrorCode;
  message: string;
  field: string | null;
}

export function payloadError(code: PayloadErrorCode, message: string, field: string | null = null): PayloadError {
  return { code, message, field };
}

/** A domain outcome: the value, or the payload error that explains why there is none. */
export type Result<T> = { ok: true; value: T } | { ok: false; error: PayloadError };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T = never>(code: PayloadErrorCode, message: string, field: string | null = null): Result<T> => ({
  ok: false,
  error: payloadError(code, message, field),
});

/** A top-level error the client may see as is (contract section 7): a bad argument value. */
export function badUserInput(message: string, argumentName?: string): GraphQLError {
  return new GraphQLError(message, {
    extensions: { code: 'BAD_USER_INPUT', ...(argumentName ? { argumentName } : {}) },
  });
}

/** Top-level error codes whose messages are safe to show; every other error is masked. */
export const CLIENT_SAFE_CODES = new Set([
  'BAD_USER_INPUT',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
  'QUERY_TOO_COMPLEX',
  'SERVICE_UNAVAILABLE',
]);

export const MASKED_MESSAGE = 'Internal server error';
