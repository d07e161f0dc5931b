import type { Migration } from 'kysely';
import * as accountsAndKeys from './001_accounts_and_keys.ts';
import * as keyCacheGeneration from './002_key_cache_generation.ts';
import * as ownersAndSessions from './003_owners_and_sessions.ts';
import * as securityLog from './004_security_log.ts';
import * as keyScopesAndCidrs from './005_key_scopes_and_cidrs.ts';
import * as idempotencyKeys from './006_idempotency_keys.ts';

export const SCHEMA = 'accounts';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_accounts_and_keys': accountsAndKeys,
  '002_key_cache_generation': keyCacheGeneration,
  '003_owners_and_sessions': ownersAndSessions,
  '004_security_log': securityLog,
  '005_key_scopes_and_cidrs': keyScopesAndCidrs,
  '006_idempotency_keys': idempotencyKeys,
};
