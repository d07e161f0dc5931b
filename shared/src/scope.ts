import type { Logger } from './logger.ts';
import type { BaseContext } from './subgraph-server.ts';

/**
 * What every use case runs in: each takes `(scope, request)`, the scope first. The database, the
 * account every query of the use case is scoped by, the request's logger, and the clock its rules
 * read (a test may set it). A service adds what its use cases call beyond its own database (another
 * subgraph, a key store) by extending this type, never by another parameter.
 */
export interface Scope<Db> {
  db: Db;
  /** The caller's account. */
  accountId: string;
  log: Logger;
  /** The clock, read where a rule compares with now. */
  now(): Date;
}

/** The clock every use case reads outside tests. */
export const wallClock = () => new Date();

/** The scope of a GraphQL request: its caller's account on the subgraph's database. */
export function callerScope<Db>(db: Db, base: BaseContext, now: () => Date = wallClock): Scope<Db> {
  return { db, accountId: base.caller.accountId, log: base.log, now };
}
