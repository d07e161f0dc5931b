import { randomBytes } from 'node:crypto';

/** UUIDv7 (RFC 9562): time-ordered, so primary-key inserts stay at the right edge of the index. */
export function newId(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive as opaque strings; anything that is not a UUID cannot name a row, so callers treat it as absent. */
export function isUuid(value: string): boolean {
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
