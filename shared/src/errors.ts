import { GraphQLError } from 'graphql';
import type { PayloadErrorCode } from './contracts/payload-errors.ts';

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
  'TEMPORARILY_UNAVAILABLE',
]);

export const MASKED_MESSAGE = 'Internal server error';

export const TEMPORARILY_UNAVAILABLE_MESSAGE = 'A service this request depends on is temporarily unavailable; retry';

const OUTAGE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/** Postgres SQLSTATEs of a server that is gone, going or full: connection exceptions (08), shutdown, too many connections. */
const OUTAGE_SQLSTATES = /^(08...|57P0[123]|53300)$/;
/** What pg's pool and ioredis say when the server went away, without an errno. */
const OUTAGE_MESSAGES = /timeout|Connection terminated|not queryable|Connection is closed/i;

/**
 * What pg and Node say when a connection broke while a statement was on it, sent and not answered.
 * "Not queryable" is what a transaction's ROLLBACK gets after its COMMIT lost the connection that way,
 * and the error the transaction then throws; it also comes of a connection that broke between two
 * statements of a request, when nothing of the next one was sent, and then errs on the safe side.
 */
const MID_STATEMENT_ERRNOS = new Set(['ECONNRESET', 'EPIPE']);
const MID_STATEMENT_MESSAGES = /Connection terminated|Query read timeout|not queryable/i;

/**
 * An outage after which a write may have committed all the same: the connection broke while a
 * statement was on it, and Postgres commits what it was sent whether or not its answer arrives. A
 * refused or unresolvable connection, a full pool, or an error Postgres itself reported (it rolled
 * the statement back) ran nothing.
 */
export function mayHaveCommitted(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && MID_STATEMENT_ERRNOS.has(code)) return true;
  if (MID_STATEMENT_MESSAGES.test(error.message)) return true;
  const inner = [error.cause, ...(error instanceof AggregateError ? error.errors : [])];
  return inner.some((cause) => mayHaveCommitted(cause, depth + 1));
}

/**
 * A database, cache or network dependency that did not answer (not our own bug): clients are told
 * TEMPORARILY_UNAVAILABLE so that they retry (contract section 7). Looks through `cause` and the
 * errors of an AggregateError (a connection tried on both IPv4 and IPv6).
 */
export function isDependencyOutage(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (OUTAGE_ERRNOS.has(code) || OUTAGE_SQLSTATES.test(code))) return true;
  if (error.name === 'MaxRetriesPerRequestError' || OUTAGE_MESSAGES.test(error.message)) return true;
  const inner = [error.cause, ...(error instanceof AggregateError ? error.errors : [])];
  return inner.some((cause) => isDependencyOutage(cause, depth + 1));
}
