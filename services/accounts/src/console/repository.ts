import type { Selectable } from 'kysely';
import { newId, type Uuid } from '@ots/shared/ids';
import { securityEventValues, type AccountsDatabase, type AccountsDb, type SecurityEventInput } from '../repository.ts';

/** The console's queries: owners, set-password links, sessions, sign-in failures. */

export type OwnerRow = Selectable<AccountsDatabase['owners']>;

export async function insertOwner(db: AccountsDb, owner: { accountId: string; email: string; createdAt: Date }): Promise<OwnerRow> {
  return db
    .insertInto('owners')
    .values({ id: newId(owner.createdAt.getTime()), account_id: owner.accountId, email: owner.email, created_at: owner.createdAt })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findOwnerByEmail(db: AccountsDb, email: string): Promise<OwnerRow | undefined> {
  return db.selectFrom('owners').selectAll().where('email', '=', email).executeTakeFirst();
}

/** The account's owners, oldest first, for the operator's `owner list`. */
export async function listOwners(db: AccountsDb, accountId: string): Promise<OwnerRow[]> {
  return db.selectFrom('owners').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
}

/** By id alone: the operator's CLI names an owner without its account. */
export async function findOwner(db: AccountsDb, ownerId: Uuid): Promise<OwnerRow | undefined> {
  return db.selectFrom('owners').selectAll().where('id', '=', ownerId).executeTakeFirst();
}

export async function setOwnerPassword(db: AccountsDb, accountId: string, ownerId: string, passwordHash: string | null, at: Date | null): Promise<void> {
  await db
    .updateTable('owners')
    .set({ password_hash: passwordHash, password_set_at: at })
    .where('account_id', '=', accountId)
    .where('id', '=', ownerId)
    .execute();
}

/**
 * Whether the owner's password is still the one `passwordHash` holds, the row share-locked until the
 * transaction ends: a reset or a new password (which end every session) then waits for it, or has
 * committed and the answer is no.
 */
export async function holdOwnerPassword(db: AccountsDb, accountId: string, ownerId: string, passwordHash: string): Promise<boolean> {
  const row = await db
    .selectFrom('owners')
    .select('id')
    .where('account_id', '=', accountId)
    .where('id', '=', ownerId)
    .where('password_hash', '=', passwordHash)
    .forShare()
    .executeTakeFirst();
  return row !== undefined;
}

/** A new link voids the owner's earlier unused ones: only the latest link works. */
export async function replaceSetPasswordToken(
  db: AccountsDb,
  token: { accountId: string; ownerId: string; tokenHash: Buffer; createdAt: Date; expiresAt: Date },
): Promise<void> {
  await db
    .updateTable('set_password_tokens')
    .set({ used_at: token.createdAt })
    .where('account_id', '=', token.accountId)
    .where('owner_id', '=', token.ownerId)
    .where('used_at', 'is', null)
    .execute();
  await db
    .insertInto('set_password_tokens')
    .values({
      id: newId(token.createdAt.getTime()),
      account_id: token.accountId,
      owner_id: token.ownerId,
      token_hash: token.tokenHash,
      created_at: token.createdAt,
      expires_at: token.expiresAt,
    })
    .execute();
}

/** The owner a live, unused link belongs to. */
export async function findUsableSetPasswordToken(db: AccountsDb, tokenHash: Buffer, now: Date) {
  return db
    .selectFrom('set_password_tokens as t')
    .innerJoin('owners as o', (join) => join.onRef('o.id', '=', 't.owner_id').onRef('o.account_id', '=', 't.account_id'))
    .select(['t.id as tokenId', 'o.id as ownerId', 'o.account_id as accountId', 'o.email as email'])
    .where('t.token_hash', '=', tokenHash)
    .where('t.used_at', 'is', null)
    .where('t.expires_at', '>', now)
    .executeTakeFirst();
}

/** Uses the link once: false when another request used it first. */
export async function useSetPasswordToken(db: AccountsDb, accountId: string, tokenId: string, now: Date): Promise<boolean> {
  const used = await db
    .updateTable('set_password_tokens')
    .set({ used_at: now })
    .where('account_id', '=', accountId)
    .where('id', '=', tokenId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst();
  return used !== undefined;
}

export async function insertSession(db: AccountsDb, session: { accountId: string; ownerId: string; tokenHash: Buffer; now: Date }): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id: newId(session.now.getTime()),
      account_id: session.accountId,
      owner_id: session.ownerId,
      token_hash: session.tokenHash,
      created_at: session.now,
      last_seen_at: session.now,
    })
    .execute();
}

export async function findSession(db: AccountsDb, tokenHash: Buffer) {
  return db
    .selectFrom('sessions as s')
    .innerJoin('owners as o', (join) => join.onRef('o.id', '=', 's.owner_id').onRef('o.account_id', '=', 's.account_id'))
    .innerJoin('accounts as a', 'a.id', 's.account_id')
    .select([
      's.id as sessionId',
      's.created_at as createdAt',
      's.last_seen_at as lastSeenAt',
      'o.id as ownerId',
      'o.email as email',
      'a.id as accountId',
      'a.name as accountName',
      'a.api_access_enabled as apiAccessEnabled',
    ])
    .where('s.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export async function touchSession(db: AccountsDb, accountId: string, sessionId: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: now }).where('account_id', '=', accountId).where('id', '=', sessionId).execute();
}

export async function deleteSession(db: AccountsDb, accountId: string, sessionId: string): Promise<void> {
  await db.deleteFrom('sessions').where('account_id', '=', accountId).where('id', '=', sessionId).execute();
}

export async function deleteSessionByToken(db: AccountsDb, tokenHash: Buffer): Promise<void> {
  await db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute();
}

export async function deleteOwnerSessions(db: AccountsDb, accountId: string, ownerId: string): Promise<void> {
  await db.deleteFrom('sessions').where('account_id', '=', accountId).where('owner_id', '=', ownerId).execute();
}

/** Sessions past either timeout are dead rows; each sign-in clears its owner's. */
export async function deleteEndedSessions(db: AccountsDb, accountId: string, ownerId: string, idleBefore: Date, createdBefore: Date): Promise<void> {
  await db
    .deleteFrom('sessions')
    .where('account_id', '=', accountId)
    .where('owner_id', '=', ownerId)
    .where((eb) => eb.or([eb('last_seen_at', '<=', idleBefore), eb('created_at', '<=', createdBefore)]))
    .execute();
}

/** Failure times since `since`, oldest first, by email and by address, leaving out the attempt being decided. */
export async function recentSignInFailures(db: AccountsDb, emailHash: Buffer, clientAddress: string, since: Date, exceptId: string) {
  const timesWhere = async (column: 'email_hash' | 'client_address', value: Buffer | string) => {
    const rows = await db
      .selectFrom('sign_in_failures')
      .select('failed_at')
      .where(column, '=', value)
      .where('failed_at', '>', since)
      .where('id', '<>', exceptId)
      .orderBy('failed_at')
      .execute();
    return rows.map((row) => row.failed_at.getTime());
  };
  const [email, address] = await Promise.all([timesWhere('email_hash', emailHash), timesWhere('client_address', clientAddress)]);
  return { email, address };
}

/** Recorded before the password is checked; returns its id so that a success (or a refusal) can take it back. */
export async function insertSignInFailure(db: AccountsDb, failure: { emailHash: Buffer; clientAddress: string; failedAt: Date }): Promise<string> {
  const id = newId(failure.failedAt.getTime());
  await db
    .insertInto('sign_in_failures')
    .values({ id, email_hash: failure.emailHash, client_address: failure.clientAddress, failed_at: failure.failedAt })
    .execute();
  return id;
}

export async function deleteSignInFailure(db: AccountsDb, id: string): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('id', '=', id).execute();
}

/**
 * A failed sign-in, once decided, in one statement whether or not the email named an owner, so that
 * both answer after the same database work (contract: "in about the same time"): failures older than
 * the window are dropped (they count for nothing, and the table stays small), the attempt's own
 * record is written again, and the owner's `sign_in.failed` event, if any, is inserted. Writing the
 * record again is what makes both commit a write: a statement that wrote nothing would commit
 * without waiting for the WAL flush, and an unknown email would be answered sooner.
 */
export async function settleSignInFailure(db: AccountsDb, failure: { pendingId: string; failedAt: Date; clearBefore: Date; event: SecurityEventInput | undefined }): Promise<void> {
  const statement = db
    .with('cleared', (cte) => cte.deleteFrom('sign_in_failures').where('failed_at', '<', failure.clearBefore).returning('id'))
    .with('rewritten', (cte) => cte.updateTable('sign_in_failures').set({ failed_at: failure.failedAt }).where('id', '=', failure.pendingId).returning('id'));
  if (failure.event) await statement.insertInto('security_events').values(securityEventValues(failure.event)).execute();
  else await statement.selectFrom('rewritten').select('id').execute();
}
