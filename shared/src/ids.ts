import { v7 } from 'uuid';

/**
 * UUIDv7 (RFC 9562): time-ordered, so primary-key inserts stay at the right edge of the index, and
 * monotonic within a process (the `uuid` package counts within a millisecond), so two events written
 * by one transaction keep the order they were written in.
 */
export function newId(now?: number): string {
  return now === undefined ? v7() : v7({ msecs: now });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive as opaque strings; anything that is not a UUID cannot name a row, so callers treat it as absent. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
