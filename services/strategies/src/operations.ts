import { fail, ok, type Result } from '@ots/shared/errors';
import type { ReceivedId } from '@ots/shared/ids';
import type { KeysetPosition } from '@ots/shared/pagination';
import type { Scope } from '@ots/shared/scope';
import { notFoundInAccount } from '@ots/shared/messages';
import type { EventType } from '@ots/shared/contracts/events';
import { recordEvent } from '@ots/shared/outbox';
import {
  decideEdit,
  decideTransition,
  nameTakenMessage,
  validateChanges,
  validateNewStrategy,
  type StatusAction,
  type StrategyStatus,
} from './domain.ts';
import { strategyView } from './mappers.ts';
import {
  insertStrategy,
  isNameTaken,
  listStrategies as listStrategyRows,
  lockStrategy,
  setStrategyStatus,
  updateStrategyFields,
  type StrategiesDb,
  type StrategyRow,
} from './repository.ts';

/**
 * The strategies use cases, each `(scope, request)`: validation and decisions come from the domain,
 * the database enforces what must hold under concurrency (the name index, row locks around every
 * read-decide-write).
 */
export type StrategiesScope = Scope<StrategiesDb>;

/** Records the event of a change in the outbox, in the change's transaction. */
async function recordStrategyEvent(trx: StrategiesDb, type: EventType, row: StrategyRow): Promise<StrategyRow> {
  await recordEvent(trx, { accountId: row.account_id, type, occurredAt: row.updated_at, data: strategyView(row) });
  return row;
}

const STATUS_EVENT: Record<StatusAction, EventType> = { pause: 'strategy.paused', resume: 'strategy.resumed', archive: 'strategy.archived' };

const notFound = (id: string): Result<never> => fail('NOT_FOUND', notFoundInAccount('strategy', id), 'id');

export async function createStrategy(
  { db, accountId }: StrategiesScope,
  input: { name: string; description?: string | null },
): Promise<Result<StrategyRow>> {
  const strategy = validateNewStrategy(input);
  if (!strategy.ok) return strategy;
  try {
    return ok(
      await db.transaction().execute(async (trx) =>
        recordStrategyEvent(trx, 'strategy.created', await insertStrategy(trx, accountId, strategy.value)),
      ),
    );
  } catch (error) {
    if (isNameTaken(error)) return fail('STRATEGY_NAME_TAKEN', nameTakenMessage(strategy.value.name), 'name');
    throw error;
  }
}

export async function updateStrategy(
  { db, accountId }: StrategiesScope,
  { id, ...input }: { id: ReceivedId; name?: string | null; description?: string | null },
): Promise<Result<StrategyRow>> {
  const changes = validateChanges(input);
  if (!changes.ok) return changes;
  const strategyId = id.uuid;
  if (!strategyId) return notFound(id.sent);
  try {
    return await db.transaction().execute(async (trx) => {
      const current = await lockStrategy(trx, accountId, strategyId);
      if (!current) return notFound(id.sent);
      const decision = decideEdit(current, changes.value);
      switch (decision.kind) {
        case 'refused':
          return { ok: false, error: decision.error };
        case 'unchanged':
          return ok(current);
        case 'change':
          return ok(await recordStrategyEvent(trx, 'strategy.updated', await updateStrategyFields(trx, accountId, strategyId, decision.changes)));
      }
    });
  } catch (error) {
    // The violation aborted the transaction, so it is mapped here, after the rollback.
    if (isNameTaken(error) && changes.value.name !== undefined) {
      return fail('STRATEGY_NAME_TAKEN', nameTakenMessage(changes.value.name), 'name');
    }
    throw error;
  }
}

export async function changeStrategyStatus(
  { db, accountId }: StrategiesScope,
  { id, action }: { id: ReceivedId; action: StatusAction },
): Promise<Result<StrategyRow>> {
  const strategyId = id.uuid;
  if (!strategyId) return notFound(id.sent);
  return db.transaction().execute(async (trx) => {
    const current = await lockStrategy(trx, accountId, strategyId);
    if (!current) return notFound(id.sent);
    const decision = decideTransition(current.status, action, current.id);
    switch (decision.kind) {
      case 'refused':
        return { ok: false, error: decision.error };
      case 'unchanged':
        return ok(current);
      case 'change':
        return ok(await recordStrategyEvent(trx, STATUS_EVENT[action], await setStrategyStatus(trx, accountId, strategyId, decision.to)));
    }
  });
}

/** A listStrategies page's arguments once the resolver has parsed them. */
export interface ListRequest {
  /** Undefined: every state. */
  statuses: readonly StrategyStatus[] | undefined;
  after: KeysetPosition | undefined;
  size: number;
}

export async function listStrategies({ db, accountId }: StrategiesScope, request: ListRequest): Promise<StrategyRow[]> {
  return listStrategyRows(db, accountId, { statuses: request.statuses, after: request.after, limit: request.size + 1 });
}
