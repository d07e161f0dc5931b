/**
 * What other packages may use of the accounts service: the gateway authenticates keys and serves the
 * console; the start, stack and bench scripts run the service and seed accounts and keys.
 * Everything else in this package is its own.
 */
export { SCHEMA as ACCOUNTS_SCHEMA } from '../migrations/index.ts';
export { demoOwnerLink } from './console/use-cases.ts';
export { registerConsole } from './console/http.ts';
export { decideKey, displayPrefixOf, generateApiKey, hashApiKey, isWellFormedApiKey, LIVE_PREFIX, type KeyRecord } from './domain.ts';
export { createAccount, createKey, revokeKey, rollKey, setApiAccess, type KeyManagement } from './key-management.ts';
export { ApiKeyStore, openKeyStore, type OpenedKeyStore } from './key-store.ts';
export { hasAnyAccount, readKeyCacheGeneration, type AccountsDatabase } from './repository.ts';
export { accountsService } from './service.ts';
