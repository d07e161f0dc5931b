import type { Config } from '@ots/shared/config';
import type { ReceivedId } from '@ots/shared/ids';
import type { Logger } from '@ots/shared/logger';
import { wallClock, type Scope } from '@ots/shared/scope';
import {
  API_KEY_SCOPES,
  displayPrefixOf,
  expiryAfterRoll,
  successorExpiry,
  generateApiKey,
  hashApiKey,
  MAX_ACCOUNT_NAME_LENGTH,
  nameProblem,
  OPERATOR,
  parseCidrs,
  parseScopes,
  type Actor,
} from './domain.ts';
import type { ApiKeyStore } from './key-store.ts';
import * as repository from './repository.ts';
import type { AccountsDb, ApiKeyRow } from './repository.ts';

/**
 * Key and account changes, for the operator's CLI and the console alike: every key change bumps
 * the cache generation in its transaction (so it holds at every gateway within 1 s) and is written
 * to the account's security log in that same transaction.
 */

/** What went wrong, so that the console can answer 404 or 409; the message is the CLI's line. */
export type KeyManagementProblem = 'not-found' | 'not-rollable' | 'invalid';

/** An operator request that names something that does not exist, or breaks a rule; nothing was changed. */
export class KeyManagementError extends Error {
  constructor(
    message: string,
    readonly problem: KeyManagementProblem = 'invalid',
    /** The input the problem is about, for the console's form. */
    readonly field?: 'scopes' | 'allowedCidrs',
  ) {
    super(message);
  }
}

/**
 * The scope of a use case with no caller account: the operator's CLI and the scripts that seed
 * accounts and keys, and the console before an owner signs in. It is the shared Scope without the
 * account, so each request names the account, key or owner it acts on; beyond the database it holds
 * the key store a key change invalidates and the settings new keys and links are made with.
 */
export interface OperatorScope extends AccountsScope {
  acting: 'operator';
}

/** What every accounts use case runs with, whoever acts. */
interface AccountsScope extends Omit<Scope<AccountsDb>, 'accountId'> {
  config: Pick<Config, 'apiKeyHmacSecret' | 'consoleBaseUrl'>;
  keyStore: ApiKeyStore;
}

/** The operator's scope on a key store's connections (the CLI's, a script's), with the wall clock. */
export function operatorScope(keys: { db: AccountsDb; keyStore: ApiKeyStore }, config: OperatorScope['config'], log: Logger): OperatorScope {
  return { acting: 'operator', db: keys.db, keyStore: keys.keyStore, config, log, now: wallClock };
}

/**
 * An owner signed in to the console: the shared Scope of their account, which confines every key
 * use case (a key or account of another is "not found"), and the actor the security log records.
 * Never an operator's scope, so no use case of the operator alone takes it.
 */
export interface OwnerScope extends AccountsScope, Scope<AccountsDb> {
  acting: 'owner';
  actor: Actor & { ownerId: string; ownerEmail: string };
}

/** Who manages keys: the operator, on any account; or an owner, on their own. */
type KeysScope = OperatorScope | OwnerScope;

const ownAccountOf = (scope: KeysScope) => (scope.acting === 'owner' ? scope.accountId : undefined);
const actorOf = (scope: KeysScope) => (scope.acting === 'owner' ? scope.actor : OPERATOR);

/** The account an id names (and the scope may act on); the id as received (CLI argument, console route), quoted as sent when it names none. */
async function existingAccount(scope: KeysScope, accountId: ReceivedId) {
  const own = ownAccountOf(scope);
  const account = accountId.uuid && (own === undefined || own === accountId.uuid) && (await repository.findAccount(scope.db, accountId.uuid));
  if (!account) throw new KeyManagementError(`no account ${accountId.sent}`, 'not-found');
  return account;
}

export async function createAccount({ db }: OperatorScope, { name }: { name: string }) {
  const trimmed = name.trim();
  const problem = nameProblem('account name', trimmed, MAX_ACCOUNT_NAME_LENGTH);
  if (problem) throw new KeyManagementError(problem);
  return repository.insertAccount(db, trimmed);
}

export async function setApiAccess(scope: OperatorScope, { accountId, enabled }: { accountId: ReceivedId; enabled: boolean }) {
  const { db, keyStore } = scope;
  const account = await existingAccount(scope, accountId);
  const { hashes, generation } = await db.transaction().execute(async (trx) => {
    const keyHashes = await repository.setApiAccess(trx, account.id, enabled);
    if (!keyHashes) throw new KeyManagementError(`no account ${accountId.sent}`, 'not-found');
    return { hashes: keyHashes, generation: await repository.bumpKeyCacheGeneration(trx) };
  });
  await keyStore.invalidate(hashes, generation);
  return { accountId: account.id, apiAccessEnabled: enabled };
}

/**
 * What a key may do and from where, as an owner or the operator gives them: scope names and CIDRs
 * (contract section 5). Absent fields keep what the key has (or, for a new key, every scope and
 * any address).
 */
export interface KeyPermissionsInput {
  scopes?: readonly string[] | undefined;
  allowedCidrs?: readonly string[] | undefined;
}

interface KeyPermissions {
  scopes: string[];
  allowedCidrs: string[];
}

/** Checks the input against the rules; a KeyManagementError naming the first problem, before anything changes. */
function checkPermissions(input: KeyPermissionsInput, current: KeyPermissions): KeyPermissions {
  const scopes = input.scopes === undefined ? current.scopes : parseScopes(input.scopes);
  if (!Array.isArray(scopes)) throw new KeyManagementError(scopes.problem, 'invalid', 'scopes');
  const allowedCidrs = input.allowedCidrs === undefined ? current.allowedCidrs : parseCidrs(input.allowedCidrs);
  if (!Array.isArray(allowedCidrs)) throw new KeyManagementError(allowedCidrs.problem, 'invalid', 'allowedCidrs');
  return { scopes, allowedCidrs };
}

const FULL_ACCESS: KeyPermissions = { scopes: [...API_KEY_SCOPES], allowedCidrs: [] };

/** Inside a transaction: a new live key of the account, logged as created with what it may do. */
async function issueKey(
  trx: AccountsDb,
  config: OperatorScope['config'],
  accountId: string,
  options: { name: string | null; expiresAt: Date | null } & KeyPermissions,
  actor: Actor,
): Promise<{ key: ApiKeyRow; apiKey: string }> {
  const apiKey = generateApiKey();
  const key = await repository.insertApiKey(trx, {
    accountId,
    name: options.name,
    keyHash: hashApiKey(config.apiKeyHmacSecret, apiKey),
    displayPrefix: displayPrefixOf(apiKey),
    expiresAt: options.expiresAt,
    scopes: options.scopes,
    allowedCidrs: options.allowedCidrs,
  });
  await repository.insertSecurityEvent(trx, {
    accountId,
    type: 'key.created',
    occurredAt: key.created_at,
    actor,
    key: { id: key.id, displayPrefix: key.display_prefix },
    detail: { scopes: key.scopes, allowedCidrs: key.allowed_cidrs },
  });
  return { key, apiKey };
}

/** Creates a key; the full key is returned here and never again. */
export async function createKey(
  scope: KeysScope,
  request: { accountId: ReceivedId; name?: string | null; expiresInMs?: number | null; expiresAt?: Date | null } & KeyPermissionsInput,
): Promise<{ key: ApiKeyRow; apiKey: string }> {
  const { db, config, now } = scope;
  const permissions = checkPermissions(request, FULL_ACCESS);
  const account = await existingAccount(scope, request.accountId);
  const expiresAt = request.expiresAt ?? (request.expiresInMs != null ? new Date(now().getTime() + request.expiresInMs) : null);
  return db.transaction().execute((trx) => issueKey(trx, config, account.id, { name: request.name ?? null, expiresAt, ...permissions }, actorOf(scope)));
}

/**
 * Changes what a key may do and from where. Like a revocation it bumps the cache generation and
 * drops the cached record, so every gateway applies it within the second; logged with the result.
 */
export async function updateKey(
  scope: KeysScope,
  { keyId: sentKeyId, ...input }: { keyId: ReceivedId } & KeyPermissionsInput,
): Promise<{ keyId: string; key: ApiKeyRow }> {
  const { db, keyStore, now } = scope;
  const { uuid: keyId, sent } = sentKeyId;
  if (!keyId) throw new KeyManagementError(`no key ${sent}`, 'not-found');
  const { key, keyHash, generation } = await db.transaction().execute(async (trx) => {
    const current = await repository.lockApiKey(trx, keyId, ownAccountOf(scope));
    if (!current) throw new KeyManagementError(`no key ${sent}`, 'not-found');
    if (current.revoked_at) throw new KeyManagementError(`key ${sent} is revoked and cannot be changed`, 'not-rollable');
    const permissions = checkPermissions(input, { scopes: current.scopes, allowedCidrs: current.allowed_cidrs });
    const updated = await repository.setApiKeyPermissions(trx, current.account_id, keyId, permissions);
    await repository.insertSecurityEvent(trx, {
      accountId: current.account_id,
      type: 'key.updated',
      occurredAt: now(),
      actor: actorOf(scope),
      key: { id: keyId, displayPrefix: current.display_prefix },
      detail: {
        scopes: updated.scopes,
        allowedCidrs: updated.allowed_cidrs,
        previousScopes: current.scopes,
        previousAllowedCidrs: current.allowed_cidrs,
      },
    });
    return { key: updated, keyHash: current.key_hash, generation: await repository.bumpKeyCacheGeneration(trx) };
  });
  await keyStore.invalidate([keyHash], generation);
  return { keyId, key };
}

/** Every account, for the operator's `account list`. */
export async function listAccounts({ db }: OperatorScope) {
  return repository.listAccounts(db);
}

/** The account's whole security log, newest first, for the CLI's `key events`. */
export async function listEvents(scope: OperatorScope, { accountId }: { accountId: ReceivedId }) {
  const { db } = scope;
  const { id } = await existingAccount(scope, accountId);
  const events: ReturnType<typeof securityEventView>[] = [];
  let after: { occurredAt: Date; seq: string } | undefined;
  for (;;) {
    const page = await repository.listSecurityEvents(db, id, { limit: 500, after });
    events.push(...page.map(securityEventView));
    const last = page.at(-1);
    if (page.length < 500 || !last) return events;
    after = { occurredAt: last.occurred_at, seq: last.seq };
  }
}

/** A security log entry as the console and the CLI show it. */
export function securityEventView(event: repository.SecurityEventRow) {
  return {
    id: event.id,
    type: event.type,
    occurredAt: event.occurred_at.toISOString(),
    ownerEmail: event.owner_email,
    clientAddress: event.client_address,
    userAgent: event.user_agent,
    keyDisplayPrefix: event.key_display_prefix,
    detail: event.detail,
  };
}

export async function listKeys(scope: OperatorScope, { accountId }: { accountId: ReceivedId }) {
  const account = await existingAccount(scope, accountId);
  return repository.listApiKeys(scope.db, account.id);
}

/** Revokes once: revoking a revoked key changes nothing and keeps the first time. */
export async function revokeKey(scope: KeysScope, { keyId: sentKeyId }: { keyId: ReceivedId }) {
  const { db, keyStore } = scope;
  const { uuid: keyId, sent } = sentKeyId;
  if (!keyId) throw new KeyManagementError(`no key ${sent}`, 'not-found');
  const { key, keyHash, generation, alreadyRevoked } = await db.transaction().execute(async (trx) => {
    const current = await repository.lockApiKey(trx, keyId, ownAccountOf(scope));
    if (!current) throw new KeyManagementError(`no key ${sent}`, 'not-found');
    const { key_hash: hash, ...unchanged } = current;
    if (current.revoked_at) return { key: unchanged as ApiKeyRow, keyHash: hash, generation: undefined, alreadyRevoked: true };
    const revoked = await repository.revokeApiKey(trx, current.account_id, keyId);
    await repository.insertSecurityEvent(trx, {
      accountId: current.account_id,
      type: 'key.revoked',
      occurredAt: revoked.revoked_at!,
      actor: actorOf(scope),
      key: { id: keyId, displayPrefix: current.display_prefix },
    });
    return { key: revoked, keyHash: hash, generation: await repository.bumpKeyCacheGeneration(trx), alreadyRevoked: false };
  });
  if (generation !== undefined) await keyStore.invalidate([keyHash], generation);
  return { keyId, revokedAt: key.revoked_at!, key, alreadyRevoked };
}

/** A new key of the same account; the old one works until the grace ends (0 ends it at once). */
export async function rollKey(scope: KeysScope, { keyId: sentKeyId, graceMs, ...change }: { keyId: ReceivedId; graceMs: number } & KeyPermissionsInput) {
  const { db, config, keyStore } = scope;
  const { uuid: keyId, sent } = sentKeyId;
  if (!keyId) throw new KeyManagementError(`no key ${sent}`, 'not-found');
  const actor = actorOf(scope);
  const result = await db.transaction().execute(async (trx) => {
    const previous = await repository.lockApiKey(trx, keyId, ownAccountOf(scope));
    if (!previous) throw new KeyManagementError(`no key ${sent}`, 'not-found');
    if (previous.revoked_at) throw new KeyManagementError(`key ${sent} is revoked and cannot be rolled`, 'not-rollable');
    // A key replaced once stays in its one roll chain: two successors would each claim to replace it.
    if (previous.replaced_by_key_id) throw new KeyManagementError(`key ${sent} was rolled already: roll the key that replaced it`, 'not-rollable');
    const now = scope.now().getTime();
    if (previous.expires_at && previous.expires_at.getTime() <= now) {
      throw new KeyManagementError(`key ${sent} has expired and cannot be rolled`, 'not-rollable');
    }
    const previousExpiresAt = new Date(expiryAfterRoll(previous.expires_at?.getTime() ?? null, now, graceMs));
    // The new key does what the old one did, unless the roll narrows or widens it.
    const permissions = checkPermissions(change, { scopes: previous.scopes, allowedCidrs: previous.allowed_cidrs });
    const expiresAt = successorExpiry({ createdAt: previous.created_at.getTime(), expiresAt: previous.expires_at?.getTime() ?? null }, now);
    const issued = await issueKey(trx, config, previous.account_id, { name: previous.name, expiresAt: expiresAt === null ? null : new Date(expiresAt), ...permissions }, actor);
    const previousKey = await repository.markApiKeyRolled(trx, previous.account_id, keyId, previousExpiresAt, issued.key.id);
    await repository.insertSecurityEvent(trx, {
      accountId: previous.account_id,
      type: 'key.rolled',
      occurredAt: issued.key.created_at,
      actor,
      key: { id: keyId, displayPrefix: previous.display_prefix },
      detail: { replacedByKeyId: issued.key.id, replacedByDisplayPrefix: issued.key.display_prefix, previousExpiresAt: previousExpiresAt.toISOString() },
    });
    return { ...issued, previousKey, previousHash: previous.key_hash, generation: await repository.bumpKeyCacheGeneration(trx) };
  });
  await keyStore.invalidate([result.previousHash], result.generation);
  return {
    keyId: result.key.id,
    apiKey: result.apiKey,
    previousKeyId: keyId,
    previousExpiresAt: result.previousKey.expires_at!,
    key: result.key,
    previousKey: result.previousKey,
  };
}
