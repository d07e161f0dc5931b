import { v7 } from 'uuid';

/**
 * UUIDv7 (RFC 9562): time-ordered, so primary-key inserts stay at the right edge of the index, and
 * monotonic within a process (the `uuid` package counts within a millisecond), so two events written
 * by one transaction keep the order they were written in.
 */
export function newId(now?: number): Uuid {
  return (now === undefined ? v7() : v7({ msecs: now })) as Uuid;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive as opaque strings; anything that is not a UUID cannot name a row, so callers treat it as absent. */
function isUuid(value: string): boolean {
  return UUID.test(value);
}

declare const uuidBrand: unique symbol;

/**
 * A UUID in Postgres' canonical lower-case form. Only `parseUuid` makes one, where a resolver receives
 * an id, so a repository that takes a `Uuid` never sends Postgres text that is not one.
 */
export type Uuid = string & { readonly [uuidBrand]: true };

/** The id as a `Uuid`; undefined when it is not a UUID, and so names no row. */
export function parseUuid(value: string): Uuid | undefined {
  return isUuid(value) ? (value.toLowerCase() as Uuid) : undefined;
}

/** An id argument as a resolver received it: the UUID it names, if any, and the text sent, for messages. */
export interface ReceivedId {
  uuid: Uuid | undefined;
  sent: string;
}

export function receiveId(sent: string): ReceivedId {
  return { uuid: parseUuid(sent), sent };
}
