import type { Config } from '@ots/shared/config';
import { isUuid } from '@ots/shared/ids';
import { displayPrefixOf, expiryAfterRoll, generateApiKey, hashApiKey } from './domain.ts';
import type { ApiKeyStore } from './key-store.ts';
import * as repository from './repository.ts';
import type { AccountsDb, ApiKeyRow } from './repository.ts';

/** An operator request that names something that does not exist, or breaks a rule; nothing was changed. */
export class KeyManagementError extends Error {}

export interface KeyManagement {
  db: AccountsDb;
  config: Pick<Config, 'apiKeyHmacSecret'>;
  keyStore: ApiKeyStore;
}

async function existingAccount(db: AccountsDb, accountId: string) {
  const account = isUuid(accountId) ? await repository.findAccount(db, accountId) : undefined;
  if (!account) throw new KeyManagementError(`no account ${accountId}`);
  return account;
}

export async function createAccount({ db }: KeyManagement, name: string) {
  const trimmed = name.trim();
  if (trimmed.length < 1 || trimmed.length > 200) throw new KeyManagementError('account name must be 1-200 characters');
  return repository.insertAccount(db, trimmed);
}

export async function setApiAccess({ db, keyStore }: KeyManagement, accountId: string, enabled: boolean) {
  await existingAccount(db, accountId);
  const { hashes, generation } = await db.transaction().execute(async (trx) => {
    const keyHashes = await repository.setApiAccess(trx, accountId, enabled);
    if (!keyHashes) throw new KeyManagementError(`no account ${accountId}`);
    return { hashes: keyHashes, generation: await repository.bumpKeyCacheGeneration(trx) };
  });
  await keyStore.invalidate(hashes, generation);
  return { accountId, apiAccessEnabled: enabled };
}

/** Creates a key; the full key is returned here and never again. */
export async function createKey(
  { db, config }: KeyManagement,
  accountId: string,
  options: { name?: string | null; expiresInMs?: number | null } = {},
): Promise<{ key: ApiKeyRow; apiKey: string }> {
  await existingAccount(db, accountId);
  const apiKey = generateApiKey();
  const key = await repository.insertApiKey(db, {
    accountId,
    name: options.name ?? null,
    keyHash: hashApiKey(config.apiKeyHmacSecret, apiKey),
    displayPrefix: displayPrefixOf(apiKey),
    expiresAt: options.expiresInMs != null ? new Date(Date.now() + options.expiresInMs) : null,
  });
  return { key, apiKey };
}

export async function listKeys({ db }: KeyManagement, accountId: string) {
  await existingAccount(db, accountId);
  return repository.listApiKeys(db, accountId);
}

export async function revokeKey({ db, keyStore }: KeyManagement, keyId: string) {
  if (!isUuid(keyId)) throw new KeyManagementError(`no key ${keyId}`);
  const { revoked, generation } = await db.transaction().execute(async (trx) => {
    const row = await repository.revokeApiKey(trx, keyId);
    if (!row) throw new KeyManagementError(`no key ${keyId}`);
    return { revoked: row, generation: await repository.bumpKeyCacheGeneration(trx) };
  });
  await keyStore.invalidate([revoked.keyHash], generation);
  return { keyId, revokedAt: revoked.revokedAt };
}

/** A new key of the same account; the old one works until the grace ends (0 ends it at once). */
export async function rollKey(management: KeyManagement, keyId: string, graceMs: number) {
  const { db, keyStore } = management;
  const previous = isUuid(keyId) ? await repository.findApiKeyWithHash(db, keyId) : undefined;
  if (!previous) throw new KeyManagementError(`no key ${keyId}`);
  if (previous.revoked_at) throw new KeyManagementError(`key ${keyId} is revoked and cannot be rolled`);
  const now = Date.now();
  if (previous.expires_at && previous.expires_at.getTime() <= now) {
    throw new KeyManagementError(`key ${keyId} has expired and cannot be rolled`);
  }
  const previousExpiresAt = new Date(expiryAfterRoll(previous.expires_at?.getTime() ?? null, now, graceMs));
  const { created, generation } = await db.transaction().execute(async (trx) => {
    const issued = await createKey({ ...management, db: trx }, previous.account_id, { name: previous.name });
    await repository.setApiKeyExpiry(trx, keyId, previousExpiresAt);
    return { created: issued, generation: await repository.bumpKeyCacheGeneration(trx) };
  });
  await keyStore.invalidate([previous.key_hash], generation);
  return { keyId: created.key.id, apiKey: created.apiKey, previousKeyId: keyId, previousExpiresAt };
}
