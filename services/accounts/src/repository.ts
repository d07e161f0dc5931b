import { sql, type ColumnType, type Generated, type Kysely, type Selectable } from 'kysely';
import { newId, type Uuid } from '@ots/shared/ids';
import type { Actor, KeyRecord, SecurityEventType } from './domain.ts';

export interface AccountsDatabase {
  accounts: {
    id: string;
    name: string;
    api_access_enabled: Generated<boolean>;
    created_at: Generated<Date>;
  };
  api_keys: {
    id: string;
    account_id: string;
    name: string | null;
    environment: 'LIVE' | 'SANDBOX';
    key_hash: Buffer;
    display_prefix: string;
    created_at: Generated<Date>;
    expires_at: Date | null;
    last_used_at: Date | null;
    revoked_at: Date | null;
    /** Set by a roll: the key that replaced this one, which works on while this one's grace runs. */
    replaced_by_key_id: Generated<string | null>;
    /** Scope names (`read`, `orders:write`, …). */
    scopes: string[];
    /** Canonical CIDRs; empty for any address. */
    allowed_cidrs: Generated<string[]>;
  };
  key_cache_generation: {
    singleton: Generated<boolean>;
    /** bigint: pg returns it as a string. */
    generation: Generated<string>;
  };
  owners: {
    id: string;
    account_id: string;
    email: string;
    password_hash: string | null;
    password_set_at: Date | null;
    created_at: Date;
  };
  set_password_tokens: {
    id: string;
    account_id: string;
    owner_id: string;
    token_hash: Buffer;
    created_at: Date;
    expires_at: Date;
    used_at: Date | null;
  };
  sessions: {
    id: string;
    account_id: string;
    owner_id: string;
    token_hash: Buffer;
    created_at: Date;
    last_seen_at: Date;
  };
  security_events: {
    id: string;
    account_id: string;
    type: SecurityEventType;
    occurred_at: Date;
    /** bigint identity: pg returns it as a string. */
    seq: Generated<string>;
    owner_id: string | null;
    owner_email: string | null;
    client_address: string | null;
    user_agent: string | null;
    key_id: string | null;
    key_display_prefix: string | null;
    /** What changed (scopes and addresses after an update) or was refused (the address). */
    detail: ColumnType<Record<string, unknown> | null, string | null | undefined, never>;
  };
  sign_in_failures: {
    id: string;
    email_hash: Buffer;
    client_address: string;
    failed_at: Date;
  };
}

export type AccountsDb = Kysely<AccountsDatabase>;
export type AccountRow = Selectable<AccountsDatabase['accounts']>;
export type ApiKeyRow = Omit<Selectable<AccountsDatabase['api_keys']>, 'key_hash'>;

const API_KEY_COLUMNS = [
  'id',
  'account_id',
  'name',
  'environment',
  'display_prefix',
  'created_at',
  'expires_at',
  'last_used_at',
  'revoked_at',
  'replaced_by_key_id',
  'scopes',
  'allowed_cidrs',
] as const;

export async function insertAccount(db: AccountsDb, name: string): Promise<AccountRow> {
  return db.insertInto('accounts').values({ id: newId(), name }).returningAll().executeTakeFirstOrThrow();
}

export async function findAccount(db: AccountsDb, accountId: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
}

/** Sets the flag and returns the hashes of the account's keys (undefined for no such account). Run it in a transaction. */
export async function setApiAccess(db: AccountsDb, accountId: string, enabled: boolean): Promise<Buffer[] | undefined> {
  const updated = await db
    .updateTable('accounts')
    .set({ api_access_enabled: enabled })
    .where('id', '=', accountId)
    .returning('id')
    .executeTakeFirst();
  if (!updated) return undefined;
  const keys = await db.selectFrom('api_keys').select('key_hash').where('account_id', '=', accountId).execute();
  return keys.map((key) => key.key_hash);
}

export interface NewApiKey {
  accountId: string;
  name: string | null;
  keyHash: Buffer;
  displayPrefix: string;
  expiresAt: Date | null;
  scopes: readonly string[];
  allowedCidrs: readonly string[];
}

export async function insertApiKey(db: AccountsDb, key: NewApiKey): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({
      id: newId(),
      account_id: key.accountId,
      name: key.name,
      environment: 'LIVE',
      key_hash: key.keyHash,
      display_prefix: key.displayPrefix,
      expires_at: key.expiresAt,
      scopes: [...key.scopes],
      allowed_cidrs: [...key.allowedCidrs],
    })
    .returning(API_KEY_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function listApiKeys(db: AccountsDb, accountId: string, order: 'asc' | 'desc' = 'asc'): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .select(API_KEY_COLUMNS)
    .where('account_id', '=', accountId)
    .orderBy('created_at', order)
    .orderBy('id', order)
    .execute();
}

/** The key of the calling request, scoped to its account. */
export async function findApiKeyOfAccount(db: AccountsDb, accountId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .select(API_KEY_COLUMNS)
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .executeTakeFirst();
}

/**
 * A key and its hash, locked for the transaction that changes it; scoped to `accountId` when the
 * caller acts for one account (the console), by id alone for the operator's CLI.
 */
export async function lockApiKey(db: AccountsDb, keyId: Uuid, accountId: string | undefined) {
  let query = db.selectFrom('api_keys').select([...API_KEY_COLUMNS, 'key_hash']).where('id', '=', keyId);
  if (accountId !== undefined) query = query.where('account_id', '=', accountId);
  return query.forUpdate().executeTakeFirst();
}

export async function revokeApiKey(db: AccountsDb, accountId: string, keyId: string): Promise<ApiKeyRow> {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: sql<Date>`now()` })
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .returning(API_KEY_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function markApiKeyRolled(db: AccountsDb, accountId: string, keyId: string, expiresAt: Date, replacedByKeyId: string): Promise<ApiKeyRow> {
  return db
    .updateTable('api_keys')
    .set({ expires_at: expiresAt, replaced_by_key_id: replacedByKeyId })
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .returning(API_KEY_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function setApiKeyPermissions(
  db: AccountsDb,
  accountId: string,
  keyId: string,
  permissions: { scopes: readonly string[]; allowedCidrs: readonly string[] },
): Promise<ApiKeyRow> {
  return db
    .updateTable('api_keys')
    .set({ scopes: [...permissions.scopes], allowed_cidrs: [...permissions.allowedCidrs] })
    .where('account_id', '=', accountId)
    .where('id', '=', keyId)
    .returning(API_KEY_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** The key a roll replaced with this one, if any. */
export async function findReplacedApiKey(db: AccountsDb, accountId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .select(API_KEY_COLUMNS)
    .where('account_id', '=', accountId)
    .where('replaced_by_key_id', '=', keyId)
    .executeTakeFirst();
}

export type SecurityEventRow = Selectable<AccountsDatabase['security_events']>;

export interface SecurityEventInput {
  accountId: string;
  type: SecurityEventType;
  occurredAt: Date;
  actor: Actor;
  key?: { id: string; displayPrefix: string };
  detail?: Record<string, unknown>;
}

/** The row an event is stored as, for a statement that writes it with other things (a failed sign-in's). */
export function securityEventValues(event: SecurityEventInput) {
  return {
    id: newId(event.occurredAt.getTime()),
    account_id: event.accountId,
    type: event.type,
    occurred_at: event.occurredAt,
    owner_id: event.actor.ownerId,
    owner_email: event.actor.ownerEmail,
    client_address: event.actor.clientAddress,
    user_agent: event.actor.userAgent,
    key_id: event.key?.id ?? null,
    key_display_prefix: event.key?.displayPrefix ?? null,
    detail: event.detail === undefined ? null : JSON.stringify(event.detail),
  };
}

/** Written in the transaction of the change it records, so the log never misses one. */
export async function insertSecurityEvent(db: AccountsDb, event: SecurityEventInput): Promise<void> {
  await db.insertInto('security_events').values(securityEventValues(event)).execute();
}

/** Newest first, keyset-paged on (occurred_at, seq): `after` is the last event of the previous page. */
export async function listSecurityEvents(
  db: AccountsDb,
  accountId: string,
  options: { limit: number; after?: { occurredAt: Date; seq: string } },
): Promise<SecurityEventRow[]> {
  let query = db.selectFrom('security_events').selectAll().where('account_id', '=', accountId);
  const after = options.after;
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('occurred_at', '<', after.occurredAt), eb.and([eb('occurred_at', '=', after.occurredAt), eb('seq', '<', after.seq)])]),
    );
  }
  return query.orderBy('occurred_at', 'desc').orderBy('seq', 'desc').limit(options.limit).execute();
}

/** The gateway's look-up: everything it needs to decide on a key, by the key's hash. */
export async function findKeyRecordByHash(db: AccountsDb, keyHash: Buffer): Promise<(KeyRecord & { keyHash: Buffer }) | null> {
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .select(['k.id', 'k.account_id', 'k.key_hash', 'k.expires_at', 'k.revoked_at', 'k.scopes', 'k.allowed_cidrs', 'a.api_access_enabled'])
    .where('k.key_hash', '=', keyHash)
    .executeTakeFirst();
  if (!row) return null;
  return {
    keyId: row.id,
    accountId: row.account_id,
    keyHash: row.key_hash,
    expiresAt: row.expires_at?.getTime() ?? null,
    revokedAt: row.revoked_at?.getTime() ?? null,
    apiAccessEnabled: row.api_access_enabled,
    scopes: row.scopes,
    allowedCidrs: row.allowed_cidrs,
  };
}

/** The key's account and display prefix, for logging a refusal of a key whose record the gateway holds. */
export async function findApiKeyForLog(db: AccountsDb, keyId: string) {
  return db.selectFrom('api_keys').select(['id', 'account_id', 'display_prefix']).where('id', '=', keyId).executeTakeFirst();
}

/** Every account, oldest first, for the operator's `account list`. */
export async function listAccounts(db: AccountsDb): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').execute();
}

/** One statement for a batch of keys; a key touched in the last minute is left alone. */
export async function touchLastUsed(db: AccountsDb, keyIds: readonly string[]): Promise<void> {
  if (keyIds.length === 0) return;
  await db
    .updateTable('api_keys')
    .set({ last_used_at: sql<Date>`now()` })
    .where('id', 'in', keyIds)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - interval '1 minute'`)]))
    .execute();
}

export async function hasAnyAccount(db: AccountsDb): Promise<boolean> {
  return (await db.selectFrom('accounts').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Called inside the transaction of every change that must invalidate cached key records. */
export async function bumpKeyCacheGeneration(db: AccountsDb): Promise<number> {
  const row = await db
    .updateTable('key_cache_generation')
    .set({ generation: sql<string>`generation + 1` })
    .where('singleton', '=', true)
    .returning('generation')
    .executeTakeFirstOrThrow();
  return Number(row.generation);
}

export async function readKeyCacheGeneration(db: AccountsDb): Promise<number> {
  const row = await db.selectFrom('key_cache_generation').select('generation').where('singleton', '=', true).executeTakeFirstOrThrow();
  return Number(row.generation);
}
