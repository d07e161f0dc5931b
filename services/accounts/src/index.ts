import { receiveId } from '@ots/shared/ids';
import * as owners from './console/operations.ts';
import type { Actor } from './domain.ts';
import * as keys from './operations.ts';

/**
 * What other packages may use of the accounts service: the gateway authenticates keys and serves the
 * console; the start, stack and bench scripts run the service and seed accounts, keys and owners.
 * Everything else in this package is its own.
 *
 * The operations below take ids as the text the caller holds and receive them here, as the CLI
 * receives its arguments, so an id that is not a UUID is "not found" in the CLI's words.
 */
export { SCHEMA as ACCOUNTS_SCHEMA } from '../migrations/index.ts';
export { registerConsole } from './console/http.ts';
export type { ConsoleDeps } from './console/operations.ts';
export { decideKey, displayPrefixOf, generateApiKey, hashApiKey, isWellFormedApiKey, LIVE_PREFIX, type KeyRecord } from './domain.ts';
export { createAccount, type KeyManagement } from './operations.ts';
export { IdempotencyStore } from './idempotency-store.ts';
export { ApiKeyStore, openKeyStore, type OpenedKeyStore } from './key-store.ts';
export { findAccount, hasAnyAccount, readKeyCacheGeneration, type AccountsDatabase } from './repository.ts';
export { accountsService } from './service.ts';

export function setApiAccess(management: keys.KeyManagement, accountId: string, enabled: boolean) {
  return keys.setApiAccess(management, receiveId(accountId), enabled);
}

export function createKey(management: keys.KeyManagement, accountId: string, options?: Parameters<typeof keys.createKey>[2], actor?: Actor) {
  return keys.createKey(management, receiveId(accountId), options, actor);
}

export function updateKey(management: keys.KeyManagement, keyId: string, input: keys.KeyPermissionsInput, options?: keys.KeyChangeOptions) {
  return keys.updateKey(management, receiveId(keyId), input, options);
}

export function listSecurityEvents(management: keys.KeyManagement, accountId: string) {
  return keys.listEvents(management, receiveId(accountId));
}

export function revokeKey(management: keys.KeyManagement, keyId: string, options?: keys.KeyChangeOptions) {
  return keys.revokeKey(management, receiveId(keyId), options);
}

export function rollKey(management: keys.KeyManagement, keyId: string, graceMs: number, options?: keys.KeyChangeOptions) {
  return keys.rollKey(management, receiveId(keyId), graceMs, options);
}

export function inviteOwner(deps: owners.ConsoleDeps, accountId: string, email: string) {
  return owners.inviteOwner(deps, receiveId(accountId), email);
}

export function resetOwnerPassword(deps: owners.ConsoleDeps, ownerId: string) {
  return owners.resetOwnerPassword(deps, receiveId(ownerId));
}

export function demoOwnerLink(deps: owners.ConsoleDeps, email: string, newAccountId?: string) {
  return owners.demoOwnerLink(deps, email, newAccountId === undefined ? undefined : receiveId(newAccountId));
}
