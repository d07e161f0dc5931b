import { createLogger } from '../logger.ts';
import type { Scope } from '../scope.ts';

const log = createLogger('test', 'silent');

/** A use case's scope in a test that calls it directly: the account on the database, a silent logger, the wall clock. */
export function testScope<Db>(db: Db, accountId: string): Scope<Db> {
  return { db, accountId, log, now: () => new Date() };
}
