import { fail, ok, type PayloadError, type Result } from '@ots/shared/errors';
import type { ReceivedId, Uuid } from '@ots/shared/ids';
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
  isDeadlock,
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

/** What the domain decides on a change to a strategy: `Change` holds what a change writes. */
type Decision<Change> = { kind: 'refused'; error: PayloadError } | { kind: 'unchanged' } | ({ kind: 'change' } & Change);

/**
 * A change to one strategy as one unit: its row locked for the transaction, the domain's decision
 * taken on it, and a change written with its event.
 */
async function changeStrategy<Change>(
  { db, accountId }: StrategiesScope,
  id: ReceivedId,
  decide: (current: StrategyRow) => Decision<Change>,
  write: (trx: StrategiesDb, strategyId: Uuid, change: Change) => Promise<StrategyRow>,
  event: EventType,
): Promise<Result<StrategyRow>> {
  const strategyId = id.uuid;
  if (!strategyId) return notFound(id.sent);
  return db.transaction().execute(async (trx) => {
    const current = await lockStrategy(trx, accountId, strategyId);
    if (!current) return notFound(id.sent);
    const decision = decide(current);
    switch (decision.kind) {
      case 'refused':
        return { ok: false, error: decision.error };
      case 'unchanged':
        return ok(current);
      case 'change':
        return ok(await recordStrategyEvent(trx, event, await write(trx, strategyId, decision)));
    }
  });
}

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
  scope: StrategiesScope,
  { id, ...input }: { id: ReceivedId; name?: string | null; description?: string | null },
): Promise<Result<StrategyRow>> {
  const changes = validateChanges(input);
  if (!changes.ok) return changes;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await changeStrategy(
        scope,
        id,
        (current) => decideEdit(current, changes.value),
        (trx, strategyId, edit) => updateStrategyFields(trx, scope.accountId, strategyId, edit.changes),
        'strategy.updated',
      );
    } catch (error) {
      // The violation aborted the transaction, so it is mapped here, after the rollback.
      if (isNameTaken(error) && changes.value.name !== undefined) {
        return fail('STRATEGY_NAME_TAKEN', nameTakenMessage(changes.value.name), 'name');
      }
      // Rolled back having changed nothing: decided again, as if it had come after the other writer.
      if (isDeadlock(error) && attempt === 1) continue;
      throw error;
    }
  }
}

export async function changeStrategyStatus(scope: StrategiesScope, { id, action }: { id: ReceivedId; action: StatusAction }): Promise<Result<StrategyRow>> {
  return changeStrategy(
    scope,
    id,
    (current) => decideTransition(current.status, action, current.id),
    (trx, strategyId, { to }) => setStrategyStatus(trx, scope.accountId, strategyId, to),
    STATUS_EVENT[action],
  );
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
