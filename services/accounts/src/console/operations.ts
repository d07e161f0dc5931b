import { receiveId, type ReceivedId } from '@ots/shared/ids';
import { PositionSeal } from '@ots/shared/sealed-cursors';
import { failedAuthClientOf, userAgentForLog } from '../domain.ts';
import * as keys from '../operations.ts';
import { KeyManagementError, type OperatorScope, type OwnerScope } from '../operations.ts';
import * as accounts from '../repository.ts';
import type { AccountsDb, ApiKeyRow, SecurityEventRow } from '../repository.ts';
import {
  expiryOf,
  GRACE_PROBLEM,
  graceMsOf,
  hashSecret,
  isSessionLive,
  isValidEmail,
  keyStatus,
  labelProblem,
  newSecret,
  normalizeEmail,
  passwordProblem,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  SET_PASSWORD_LINK_TTL_MS,
  setPasswordUrl,
  SIGN_IN_WINDOW_MS,
  signInAllowance,
  type ExpiryChoice,
} from './domain.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import * as repository from './repository.ts';

/**
 * The console's use cases, each `(scope, request)`: before sign-in (and for the operator's owner
 * commands) in the `OperatorScope`, whose clock every session, link and limit rule reads; after
 * sign-in in the owner's `OwnerScope` (`ownerScope`).
 */

/** Where a request came from, for the security log and the per-address limit. */
export interface RequestOrigin {
  clientAddress: string;
  userAgent: string | null;
}

/** A refusal the console shows: the HTTP status and the contract's `{detail, field?}`. */
export class ConsoleError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 429 | 503,
    readonly detail: string,
    readonly field?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

const SIGN_IN_FAILED = 'Email or password is incorrect';
export const SIGN_IN_REQUIRED = 'Sign in required';
const LINK_INVALID = 'This link is invalid or has expired';
export const NOT_FOUND = 'Not found';

export interface SessionView {
  owner: { id: string; email: string };
  account: { id: string; name: string; apiAccessEnabled: boolean };
}

/** The signed-in owner: what every console route after sign-in acts as. */
export interface Session extends SessionView {
  sessionId: string;
}

export interface KeyView {
  id: string;
  label: string | null;
  environment: 'LIVE' | 'SANDBOX';
  displayPrefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  status: ReturnType<typeof keyStatus>;
  scopes: string[];
  /** Empty for any address. */
  allowedCidrs: string[];
  /** The roll chain: the key this one replaced, and the one that replaced it. */
  replacesKeyId: string | null;
  replacedByKeyId: string | null;
}

function keyView(key: ApiKeyRow, now: number, replacesKeyId: string | null = null): KeyView {
  return {
    id: key.id,
    label: key.name,
    environment: key.environment,
    displayPrefix: key.display_prefix,
    createdAt: key.created_at.toISOString(),
    lastUsedAt: key.last_used_at?.toISOString() ?? null,
    expiresAt: key.expires_at?.toISOString() ?? null,
    revokedAt: key.revoked_at?.toISOString() ?? null,
    status: keyStatus(
      { revokedAt: key.revoked_at?.getTime() ?? null, expiresAt: key.expires_at?.getTime() ?? null, replaced: key.replaced_by_key_id !== null },
      now,
    ),
    scopes: key.scopes,
    allowedCidrs: key.allowed_cidrs,
    replacesKeyId,
    replacedByKeyId: key.replaced_by_key_id,
  };
}

function actorOf(session: { owner: { id: string; email: string } }, request: RequestOrigin): OwnerScope['actor'] {
  return {
    ownerId: session.owner.id,
    ownerEmail: session.owner.email,
    clientAddress: request.clientAddress,
    userAgent: userAgentForLog(request.userAgent),
  };
}

/** The signed-in owner's scope for one request: their account, and them (from where they are) as the actor. */
export function ownerScope(scope: OperatorScope, session: Session, origin: RequestOrigin): OwnerScope {
  return { ...scope, acting: 'owner', accountId: session.account.id, actor: actorOf(session, origin) };
}

// Owners are managed by the operator's CLI (and `npm start`'s demo owner): no console route reaches these.

async function issueSetPasswordLink(scope: OperatorScope, db: AccountsDb, owner: { accountId: string; ownerId: string }): Promise<string> {
  const token = newSecret();
  const now = scope.now().getTime();
  await repository.replaceSetPasswordToken(db, {
    accountId: owner.accountId,
    ownerId: owner.ownerId,
    tokenHash: hashSecret(token),
    createdAt: new Date(now),
    expiresAt: new Date(now + SET_PASSWORD_LINK_TTL_MS),
  });
  return setPasswordUrl(scope.config.consoleBaseUrl, token);
}

/** `owner invite`: a new owner of the account and their one-time set-password link (24 h). */
export async function inviteOwner(scope: OperatorScope, { accountId: sentAccountId, email }: { accountId: ReceivedId; email: string }) {
  const address = normalizeEmail(email);
  if (!isValidEmail(address)) throw new KeyManagementError(`"${email}" is not an email address`);
  const account = sentAccountId.uuid && (await accounts.findAccount(scope.db, sentAccountId.uuid));
  if (!account) throw new KeyManagementError(`no account ${sentAccountId.sent}`, 'not-found');
  const accountId = account.id;
  return scope.db.transaction().execute(async (trx) => {
    const existing = await repository.findOwnerByEmail(trx, address);
    if (existing) {
      throw new KeyManagementError(`${address} is already owner ${existing.id}; owner reset-password ${existing.id} gives a new link, and clears the password they have`);
    }
    const owner = await repository.insertOwner(trx, { accountId, email: address, createdAt: scope.now() });
    return { ownerId: owner.id, setPasswordUrl: await issueSetPasswordLink(scope, trx, { accountId, ownerId: owner.id }) };
  });
}

/** The account's owners as the operator's `owner list` shows them: never a password or its hash. */
export async function listOwners({ db }: OperatorScope, { accountId: sentAccountId }: { accountId: ReceivedId }) {
  const account = sentAccountId.uuid && (await accounts.findAccount(db, sentAccountId.uuid));
  if (!account) throw new KeyManagementError(`no account ${sentAccountId.sent}`, 'not-found');
  return (await repository.listOwners(db, account.id)).map((owner) => ({
    ownerId: owner.id,
    email: owner.email,
    passwordSet: owner.password_hash !== null,
    createdAt: owner.created_at.toISOString(),
  }));
}

/**
 * `owner reset-password`: a new link, the owner's sessions ended and the old password cleared, so
 * whoever knew it (the reason for most resets) is out at once.
 */
export async function resetOwnerPassword(scope: OperatorScope, { ownerId }: { ownerId: ReceivedId }) {
  const owner = ownerId.uuid && (await repository.findOwner(scope.db, ownerId.uuid));
  if (!owner) throw new KeyManagementError(`no owner ${ownerId.sent}`, 'not-found');
  return scope.db.transaction().execute(async (trx) => {
    await repository.setOwnerPassword(trx, owner.account_id, owner.id, null, null);
    await repository.deleteOwnerSessions(trx, owner.account_id, owner.id);
    return { ownerId: owner.id, setPasswordUrl: await issueSetPasswordLink(scope, trx, { accountId: owner.account_id, ownerId: owner.id }) };
  });
}

/**
 * `npm start`'s demo owner: invited with the demo account when `newAccountId` is given, and given a
 * fresh link on later runs while no password was set (a link is stored hashed, so it cannot be shown again).
 */
export async function demoOwnerLink(scope: OperatorScope, { email, newAccountId }: { email: string; newAccountId?: ReceivedId | undefined }): Promise<string | undefined> {
  const owner = await repository.findOwnerByEmail(scope.db, normalizeEmail(email));
  if (!owner) return newAccountId ? (await inviteOwner(scope, { accountId: newAccountId, email })).setPasswordUrl : undefined;
  if (owner.password_hash !== null) return undefined;
  return issueSetPasswordLink(scope, scope.db, { accountId: owner.account_id, ownerId: owner.id });
}

/**
 * A new session in place of the one the browser still presents, if any (another owner's, or this
 * owner's from before): a cookie replaced in the browser must not leave a live session behind it.
 */
async function startSession(scope: OperatorScope, db: AccountsDb, owner: { accountId: string; ownerId: string }, previousToken: string | undefined): Promise<string> {
  if (previousToken) await repository.deleteSessionByToken(db, hashSecret(previousToken));
  const token = newSecret();
  await repository.insertSession(db, { accountId: owner.accountId, ownerId: owner.ownerId, tokenHash: hashSecret(token), now: scope.now() });
  return token;
}

async function sessionViewOf(scope: OperatorScope, token: string): Promise<SessionView> {
  const session = await currentSession(scope, { token });
  if (!session) throw new Error('a session just started is not found');
  return { owner: session.owner, account: session.account };
}

/**
 * Sign-in: 401 with one message for every failure, whatever failed (unknown email, no password
 * yet, wrong password), in about the same time. The attempt is recorded as a failure before the
 * password is checked and cleared on success, so parallel guesses cannot slip past the limits.
 */
export async function signIn(
  scope: OperatorScope,
  { body, origin: request, previousToken }: { body: { email?: unknown; password?: unknown }; origin: RequestOrigin; previousToken: string | undefined },
) {
  const { db } = scope;
  const email = typeof body.email === 'string' ? normalizeEmail(body.email) : '';
  const password = typeof body.password === 'string' ? body.password : '';
  const now = scope.now().getTime();
  // Counted per client as the gateway counts failed keys: an IPv6 client's /64, not each address of it.
  const attempt = { emailHash: hashSecret(email), clientAddress: failedAuthClientOf(request.clientAddress), failedAt: new Date(now) };
  const pendingId = await repository.insertSignInFailure(db, attempt);
  const failures = await repository.recentSignInFailures(db, attempt.emailHash, attempt.clientAddress, new Date(now - SIGN_IN_WINDOW_MS), pendingId);
  const allowance = signInAllowance(failures, now);
  if (!allowance.allowed) {
    await repository.deleteSignInFailure(db, pendingId);
    throw new ConsoleError(429, 'Too many failed sign-ins; try again later', undefined, allowance.retryAfterSeconds);
  }
  // What is not an email address names no owner: never asked of the database (a NUL it would refuse).
  const owner = isValidEmail(email) ? await repository.findOwnerByEmail(db, email) : undefined;
  const valid = await verifyPassword(owner?.password_hash ?? null, password);
  const refuse = async (): Promise<never> => {
    // One statement either way, the owner's security event inside it: an owner's email is answered no later than an unknown one.
    await repository.settleSignInFailure(db, {
      pendingId,
      failedAt: attempt.failedAt,
      clearBefore: new Date(now - SIGN_IN_WINDOW_MS),
      event: owner && {
        accountId: owner.account_id,
        type: 'sign_in.failed',
        occurredAt: new Date(now),
        actor: actorOf({ owner: { id: owner.id, email: owner.email } }, request),
      },
    });
    throw new ConsoleError(401, SIGN_IN_FAILED);
  };
  if (!owner || !valid) return refuse();
  const token = await db.transaction().execute(async (trx) => {
    // The password checked may have been cleared or changed since it was read (`owner reset-password`,
    // a new password), which ended every session: one begun on it must not outlive them.
    if (!(await repository.holdOwnerPassword(trx, owner.account_id, owner.id, owner.password_hash!))) return undefined;
    await repository.deleteSignInFailure(trx, pendingId);
    await repository.deleteEndedSessions(trx, owner.account_id, owner.id, new Date(now - SESSION_IDLE_MS), new Date(now - SESSION_ABSOLUTE_MS));
    await accounts.insertSecurityEvent(trx, {
      accountId: owner.account_id,
      type: 'sign_in.succeeded',
      occurredAt: new Date(now),
      actor: actorOf({ owner: { id: owner.id, email: owner.email } }, request),
    });
    return startSession(scope, trx, { accountId: owner.account_id, ownerId: owner.id }, previousToken);
  });
  // The password was right when checked and is no longer: a failed sign-in, which the owner's log shows.
  if (token === undefined) return refuse();
  return { token, view: await sessionViewOf(scope, token) };
}

/** The session a cookie names, if it is live; using it restarts the idle timeout. */
export async function currentSession({ db, now: clock }: OperatorScope, { token }: { token: string | undefined }): Promise<Session | undefined> {
  if (!token) return undefined;
  const row = await repository.findSession(db, hashSecret(token));
  if (!row) return undefined;
  const now = clock().getTime();
  if (!isSessionLive({ createdAt: row.createdAt.getTime(), lastSeenAt: row.lastSeenAt.getTime() }, now)) {
    await repository.deleteSession(db, row.accountId, row.sessionId);
    return undefined;
  }
  await repository.touchSession(db, row.accountId, row.sessionId, new Date(now));
  return {
    sessionId: row.sessionId,
    owner: { id: row.ownerId, email: row.email },
    account: { id: row.accountId, name: row.accountName, apiAccessEnabled: row.apiAccessEnabled },
  };
}

export async function signOut({ db }: OperatorScope, { token }: { token: string | undefined }): Promise<void> {
  if (!token) return;
  const row = await repository.findSession(db, hashSecret(token));
  if (row) await repository.deleteSession(db, row.accountId, row.sessionId);
}

/** Whether a set-password link can still be used, without using it: the page says so before asking for a password. */
export async function checkSetPasswordLink({ db, now }: OperatorScope, { body }: { body: { token?: unknown } }): Promise<void> {
  const link = typeof body.token === 'string' && body.token.length <= 100 ? body.token : '';
  const found = link === '' ? undefined : await repository.findUsableSetPasswordToken(db, hashSecret(link), now());
  if (!found) throw new ConsoleError(400, LINK_INVALID);
}

/**
 * Through a one-time link: sets the password, ends every session of the owner and signs in anew.
 * The link is checked before the password so that a short password does not use it up.
 */
export async function setPassword(
  scope: OperatorScope,
  { body, origin: request, previousToken }: { body: { token?: unknown; password?: unknown }; origin: RequestOrigin; previousToken: string | undefined },
) {
  const { db } = scope;
  const link = typeof body.token === 'string' && body.token.length <= 100 ? body.token : '';
  const password = typeof body.password === 'string' ? body.password : '';
  const now = scope.now();
  const found = link === '' ? undefined : await repository.findUsableSetPasswordToken(db, hashSecret(link), now);
  if (!found) throw new ConsoleError(400, LINK_INVALID);
  const problem = passwordProblem(password);
  if (problem) throw new ConsoleError(400, problem, 'password');
  const passwordHash = await hashPassword(password);
  const token = await db.transaction().execute(async (trx) => {
    if (!(await repository.useSetPasswordToken(trx, found.accountId, found.tokenId, now))) throw new ConsoleError(400, LINK_INVALID);
    await repository.setOwnerPassword(trx, found.accountId, found.ownerId, passwordHash, now);
    await repository.deleteOwnerSessions(trx, found.accountId, found.ownerId);
    await accounts.insertSecurityEvent(trx, {
      accountId: found.accountId,
      type: 'password.set',
      occurredAt: now,
      actor: actorOf({ owner: { id: found.ownerId, email: found.email } }, request),
    });
    return startSession(scope, trx, { accountId: found.accountId, ownerId: found.ownerId }, previousToken);
  });
  return { token, view: await sessionViewOf(scope, token) };
}

// Key changes go through the CLI's use cases (../operations.ts), so the console and the CLI refuse the
// same things in the same words.

function keyProblem(error: unknown): never {
  if (error instanceof KeyManagementError) {
    if (error.problem === 'not-found') throw new ConsoleError(404, NOT_FOUND);
    if (error.problem === 'not-rollable') throw new ConsoleError(409, 'A revoked, expired or already rolled key cannot be rolled, and a revoked key cannot be changed');
    if (error.problem === 'invalid') throw new ConsoleError(400, error.message, error.field);
  }
  throw error;
}

export async function listKeys({ db, accountId, now: clock }: OwnerScope) {
  const rows = await accounts.listApiKeys(db, accountId, 'desc');
  const now = clock().getTime();
  const replaced = new Map(rows.filter((row) => row.replaced_by_key_id).map((row) => [row.replaced_by_key_id!, row.id]));
  return { keys: rows.map((row) => keyView(row, now, replaced.get(row.id) ?? null)) };
}

/**
 * The form's "Permissions" (scope names) and "Allowed IP addresses" (a list, or the text area's
 * lines); absent keeps what the key has. The use-case checks the values, as for the CLI.
 */
function permissionsOf(body: { scopes?: unknown; allowedCidrs?: unknown }): keys.KeyPermissionsInput {
  const { scopes, allowedCidrs } = body;
  if (scopes !== undefined && (!Array.isArray(scopes) || !scopes.every((scope) => typeof scope === 'string'))) {
    throw new ConsoleError(400, 'Choose the key\'s permissions', 'scopes');
  }
  let cidrs: string[] | undefined;
  if (typeof allowedCidrs === 'string') cidrs = allowedCidrs.split(/[\s,]+/);
  else if (Array.isArray(allowedCidrs) && allowedCidrs.every((cidr) => typeof cidr === 'string')) cidrs = allowedCidrs;
  else if (allowedCidrs !== undefined) throw new ConsoleError(400, 'Give one IP address or CIDR per line', 'allowedCidrs');
  return { scopes: scopes as string[] | undefined, allowedCidrs: cidrs };
}

/** "Edit" → "Save": what the key may do and from where, through the CLI's `key update` use-case. */
export async function updateKey(scope: OwnerScope, { keyId, body }: { keyId: ReceivedId; body: { scopes?: unknown; allowedCidrs?: unknown } }) {
  const updated = await keys.updateKey(scope, { keyId, ...permissionsOf(body) }).catch(keyProblem);
  const replaces = await accounts.findReplacedApiKey(scope.db, scope.accountId, updated.key.id);
  return { key: keyView(updated.key, scope.now().getTime(), replaces?.id ?? null) };
}

export async function createKey(
  scope: OwnerScope,
  { body }: { body: { label?: unknown; environment?: unknown; expires?: unknown; expiresOn?: unknown; scopes?: unknown; allowedCidrs?: unknown } },
) {
  if (typeof body.label !== 'string') throw new ConsoleError(400, 'Give the key a label', 'label');
  const label = body.label.trim();
  const problem = labelProblem(label);
  if (problem) throw new ConsoleError(400, problem, 'label');
  if (body.environment !== undefined && body.environment !== 'LIVE') throw new ConsoleError(400, 'Sandbox keys are coming soon', 'environment');
  const choice = body.expires ?? 'never';
  if (typeof choice !== 'string' || !['never', '30d', '90d', 'date'].includes(choice)) throw new ConsoleError(400, 'Choose never, 30 days, 90 days or a date', 'expires');
  const expiry = expiryOf(choice as ExpiryChoice, typeof body.expiresOn === 'string' ? body.expiresOn : undefined, scope.now().getTime());
  if ('problem' in expiry) throw new ConsoleError(400, expiry.problem, 'expiresOn');
  const { key, apiKey } = await keys
    .createKey(scope, {
      accountId: receiveId(scope.accountId),
      name: label,
      expiresAt: expiry.expiresAt === null ? null : new Date(expiry.expiresAt),
      ...permissionsOf(body),
    })
    .catch(keyProblem);
  return { key: keyView(key, scope.now().getTime()), apiKey };
}

export async function rollKey(scope: OwnerScope, { keyId, body }: { keyId: ReceivedId; body: { grace?: unknown } }) {
  const graceMs = graceMsOf(body.grace);
  if (graceMs === undefined) throw new ConsoleError(400, GRACE_PROBLEM, 'grace');
  const rolled = await keys.rollKey(scope, { keyId, graceMs }).catch(keyProblem);
  const now = scope.now().getTime();
  return { key: keyView(rolled.key, now, rolled.previousKey.id), apiKey: rolled.apiKey, previousKey: keyView(rolled.previousKey, now) };
}

export async function revokeKey(scope: OwnerScope, { keyId }: { keyId: ReceivedId }) {
  const revoked = await keys.revokeKey(scope, { keyId }).catch(keyProblem);
  return { key: keyView(revoked.key, scope.now().getTime()) };
}

const LOG_PAGE_SIZE = 50;

/**
 * The log's cursors are sealed (shared/src/sealed-cursors.ts) to the owner's account: `seq` counts
 * every account's security events, which in the clear would tell an owner how busy everyone is.
 * Made per request (the console is rarely asked) under a key derived from the API-key secret.
 */
function logCursors(scope: OwnerScope) {
  const seal = new PositionSeal(scope.config.apiKeyHmacSecret, 'console security log cursors v1', 'security-log');
  return {
    encode(event: SecurityEventRow): string {
      const plain = Buffer.alloc(24);
      plain.writeBigInt64BE(BigInt(event.occurred_at.getTime()), 0);
      plain.writeBigInt64BE(BigInt(event.seq), 8);
      return seal.sealBytes(scope.accountId, plain);
    },
    decode(cursor: string): { occurredAt: Date; seq: string } | undefined {
      try {
        const plain = seal.openBytes(scope.accountId, cursor);
        return { occurredAt: new Date(Number(plain.readBigInt64BE(0))), seq: plain.readBigInt64BE(8).toString() };
      } catch {
        return undefined;
      }
    },
  };
}

/** Newest first, 50 a page; a cursor only positions within the caller's own account's log. */
export async function securityLog(scope: OwnerScope, { after }: { after: string | undefined }) {
  const { db, accountId } = scope;
  const cursors = logCursors(scope);
  const position = after === undefined || after === '' ? undefined : cursors.decode(after);
  if (after && !position) throw new ConsoleError(400, 'This cursor is not one the security log gave', 'after');
  const rows = await accounts.listSecurityEvents(db, accountId, { limit: LOG_PAGE_SIZE + 1, after: position });
  const page = rows.slice(0, LOG_PAGE_SIZE);
  return { events: page.map(keys.securityEventView), nextCursor: rows.length > LOG_PAGE_SIZE ? cursors.encode(page.at(-1)!) : null };
}
