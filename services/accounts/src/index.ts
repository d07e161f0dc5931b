import { receiveId } from '@ots/shared/ids';
import * as owners from './console/operations.ts';
import * as keys from './operations.ts';
import type { OperatorScope } from './operations.ts';

/**
 * What other packages may use of the accounts service: the gateway authenticates keys and serves the
 * console; the start, stack and bench scripts run the service and seed accounts, keys and owners.
 * Everything else in this package is its own.
 *
 * The use cases below act as the operator (`OperatorScope`: no caller account, the request names the
 * account, key or owner). They take ids as the text the caller holds and receive them here, as the
 * CLI receives its arguments, so an id that is not a UUID is "not found" in the CLI's words.
 */
export { SCHEMA as ACCOUNTS_SCHEMA } from '../migrations/index.ts';
export { registerConsole } from './console/http.ts';
export { decideKey, displayPrefixOf, failedAuthClientOf, generateApiKey, hashApiKey, isWellFormedApiKey, LIVE_PREFIX, type KeyRecord } from './domain.ts';
export { createAccount, operatorScope, type OperatorScope } from './operations.ts';
export { IdempotencyStore, type StoredAnswer } from './idempotency-store.ts';
export { ApiKeyStore, openKeyStore, type OpenedKeyStore } from './key-store.ts';
export { findAccount, hasAnyAccount, readKeyCacheGeneration, type AccountsDatabase } from './repository.ts';
export { accountsService } from './service.ts';

/** A use case's request as its caller holds it: the named id as text. */
type Sent<Request, Id extends keyof Request> = Omit<Request, Id> & { [Field in Id]: string };

export function setApiAccess(scope: OperatorScope, { accountId, ...request }: Sent<Parameters<typeof keys.setApiAccess>[1], 'accountId'>) {
  return keys.setApiAccess(scope, { ...request, accountId: receiveId(accountId) });
}

export function createKey(scope: OperatorScope, { accountId, ...request }: Sent<Parameters<typeof keys.createKey>[1], 'accountId'>) {
  return keys.createKey(scope, { ...request, accountId: receiveId(accountId) });
}

export function updateKey(scope: OperatorScope, { keyId, ...request }: Sent<Parameters<typeof keys.updateKey>[1], 'keyId'>) {
  return keys.updateKey(scope, { ...request, keyId: receiveId(keyId) });
}

export function listSecurityEvents(scope: OperatorScope, { accountId }: { accountId: string }) {
  return keys.listEvents(scope, { accountId: receiveId(accountId) });
}

export function revokeKey(scope: OperatorScope, { keyId }: { keyId: string }) {
  return keys.revokeKey(scope, { keyId: receiveId(keyId) });
}

export function rollKey(scope: OperatorScope, { keyId, ...request }: Sent<Parameters<typeof keys.rollKey>[1], 'keyId'>) {
  return keys.rollKey(scope, { ...request, keyId: receiveId(keyId) });
}

export function inviteOwner(scope: OperatorScope, { accountId, email }: { accountId: string; email: string }) {
  return owners.inviteOwner(scope, { accountId: receiveId(accountId), email });
}

export function resetOwnerPassword(scope: OperatorScope, { ownerId }: { ownerId: string }) {
  return owners.resetOwnerPassword(scope, { ownerId: receiveId(ownerId) });
}

export function demoOwnerLink(scope: OperatorScope, { email, newAccountId }: { email: string; newAccountId?: string | undefined }) {
  return owners.demoOwnerLink(scope, { email, newAccountId: newAccountId === undefined ? undefined : receiveId(newAccountId) });
}
