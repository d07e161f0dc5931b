import { sql, type Generated, type Kysely, type Selectable } from 'kysely';
import { newId, type Uuid } from '@ots/shared/ids';
import type { OutboxDatabase } from '@ots/shared/outbox';
import { inKeysetOrder, type KeysetPosition } from '@ots/shared/pagination';
import { nameKey, type NewStrategy, type StrategyChanges, type StrategyStatus } from './domain.ts';

export interface StrategiesDatabase extends OutboxDatabase {
  strategies: {
    id: string;
    account_id: string;
    name: string;
    /** nameKey(name): what the uniqueness rule compares, computed here rather than by the database's lower(). */
    name_key: string;
    description: string | null;
    status: StrategyStatus;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
  };
}

export type StrategiesDb = Kysely<StrategiesDatabase>;
export type StrategyRow = Selectable<StrategiesDatabase['strategies']>;

/** The partial unique index of migration 002: one non-archived strategy per name key and account. */
const NAME_INDEX = 'strategies_account_active_name_key';

/** True for the unique violation of the name index, which callers report as STRATEGY_NAME_TAKEN. */
export function isNameTaken(error: unknown): boolean {
  const pgError = error as { code?: unknown; constraint?: unknown } | null;
  return pgError?.code === '23505' && pgError.constraint === NAME_INDEX;
}

/**
 * Postgres ended a deadlock by failing this transaction, which it rolled back. Two renames that take
 * each other's names at once can meet so in the name index, each waiting for the other's change.
 */
export function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40P01';
}

/** Throws the name index's unique violation when the name is taken (see isNameTaken). */
export async function insertStrategy(db: StrategiesDb, accountId: string, strategy: NewStrategy): Promise<StrategyRow> {
  return db
    .insertInto('strategies')
    .values({
      id: newId(),
      account_id: accountId,
      name: strategy.name,
      name_key: nameKey(strategy.name),
      description: strategy.description,
      status: 'ACTIVE',
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** One query for a batch of ids; ids of other accounts are simply not returned. */
export async function findStrategiesByIds(db: StrategiesDb, accountId: string, ids: readonly Uuid[]): Promise<StrategyRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('strategies').selectAll().where('account_id', '=', accountId).where('id', 'in', ids).execute();
}

/** Locks the row until the transaction ends, so that the decision taken on its state still holds when it is written. */
export async function lockStrategy(trx: StrategiesDb, accountId: string, id: Uuid): Promise<StrategyRow | undefined> {
  return trx
    .selectFrom('strategies')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Not now(): that is the transaction's start, which may precede the commit of a change that held the
 * row lock before this one; the statement runs after the lock is granted, so updatedAt never goes back.
 */
const CHANGE_TIME = sql<Date>`statement_timestamp()`;

/** Throws the name index's unique violation when a new name is taken (see isNameTaken). */
export async function updateStrategyFields(
  trx: StrategiesDb,
  accountId: string,
  id: Uuid,
  changes: StrategyChanges,
): Promise<StrategyRow> {
  return trx
    .updateTable('strategies')
    .set({ ...changes, ...(changes.name === undefined ? {} : { name_key: nameKey(changes.name) }), updated_at: CHANGE_TIME })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function setStrategyStatus(trx: StrategiesDb, accountId: string, id: Uuid, status: StrategyStatus): Promise<StrategyRow> {
  return trx
    .updateTable('strategies')
    .set({ status, updated_at: CHANGE_TIME })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface ListQuery {
  /** Undefined: every state. */
  statuses: readonly StrategyStatus[] | undefined;
  after: KeysetPosition | undefined;
  limit: number;
}

/** Newest first (created_at desc, id desc), keyset-paged: the index on (account_id, created_at desc, id desc) seeks straight to the page. */
export async function listStrategies(db: StrategiesDb, accountId: string, query: ListQuery): Promise<StrategyRow[]> {
  if (query.statuses?.length === 0) return [];
  let select = db.selectFrom('strategies').selectAll().where('account_id', '=', accountId);
  if (query.statuses) select = select.where('status', 'in', query.statuses);
  return inKeysetOrder(select, { time: 'created_at', after: query.after, limit: query.limit }).execute();
}
