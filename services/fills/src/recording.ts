import type { CallerIdentity } from '@ots/shared/assertion';
import { formatDecimal } from '@ots/shared/decimal';
import { fail, ok, type Result } from '@ots/shared/errors';
import { isUuid, newId } from '@ots/shared/ids';
import type { Logger } from '@ots/shared/logger';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import {
  checkFillable,
  duplicateExecutionId,
  isSameFill,
  orderNotFound,
  settlementOf,
  validateRecordFill,
  type RecordFillInput,
} from './domain.ts';
import { applyFillToOrder, readOrder, withDeadline, type OrdersLink } from './orders-client.ts';
import { deletePendingFill, findFillByExecutionId, insertPendingFill, markFillApplied, type FillRow, type FillsDb } from './repository.ts';

export interface RecordingDeps {
  db: FillsDb;
  /**
   * For a request, `timeoutMs` is the budget of the whole recordFill: its calls to orders share one
   * deadline (see `withDeadline`). The sweeper's link has none: each of its calls gets the timeout.
   */
  orders: OrdersLink;
  log: Logger;
}

/** How often a request re-reads after losing an execution-id race to a fill that was then refused and dropped. */
const MAX_RACE_ROUNDS = 3;

/** No field on either: nothing the client sent is wrong. */
const UNAVAILABLE_NOTHING_STORED =
  'The orders service did not answer in time; nothing was recorded, and a retry with the same executionId is safe.';
const UNAVAILABLE_PENDING =
  'The orders service did not answer in time. The fill is stored and recovery will apply it to the order or refuse it; ' +
  'a retry with the same executionId is safe and returns the outcome.';

/**
 * recordFill crosses two databases: orders owns the order's state, fills owns the fill. The fill is
 * first stored PENDING (invisible to reads), then applied to the order through orders' `applyFill`,
 * which is idempotent per fill id, then marked APPLIED. A crash or timeout anywhere leaves a pending
 * fill that the next retry or the recovery sweeper settles the same way, so the two sides converge.
 */
export async function recordFill(requestDeps: RecordingDeps, caller: CallerIdentity, input: RecordFillInput): Promise<Result<FillRow>> {
  // One deadline for every call to orders this request makes, counted from its start.
  const deps = { ...requestDeps, orders: withDeadline(requestDeps.orders) };
  const validated = validateRecordFill(input, Date.now());
  if (!validated.ok) return validated;
  const terms = validated.value;

  for (let round = 0; round < MAX_RACE_ROUNDS; round += 1) {
    const existing = await findFillByExecutionId(deps.db, caller.accountId, terms.executionId);
    if (existing) {
      if (!isSameFill(recordedTermsOf(existing), terms)) return { ok: false, error: duplicateExecutionId(terms.executionId) };
      if (existing.status === 'APPLIED') return ok(existing);
      return settlePendingFill(deps, existing);
    }

    if (!isUuid(terms.orderSubmissionId)) return { ok: false, error: orderNotFound(terms.orderSubmissionId) };
    let order;
    try {
      order = await readOrder(deps.orders, terms.orderSubmissionId);
    } catch (error) {
      if (!(error instanceof SubgraphUnavailableError)) throw error;
      deps.log.warn({ err: error }, 'orders unavailable while reading the order of a fill; nothing stored');
      return fail('TEMPORARILY_UNAVAILABLE', UNAVAILABLE_NOTHING_STORED);
    }
    const fillable = checkFillable(order, terms.orderSubmissionId, terms.quantity);
    if (!fillable.ok) return fillable;

    const pending = await insertPendingFill(deps.db, {
      id: newId(),
      accountId: caller.accountId,
      apiKeyId: caller.apiKeyId,
      orderSubmissionId: terms.orderSubmissionId,
      strategyId: fillable.value.strategy?.id ?? null,
      symbol: fillable.value.symbol,
      side: fillable.value.side,
      executionId: terms.executionId,
      quantity: formatDecimal(terms.quantity),
      price: formatDecimal(terms.price),
      fee: formatDecimal(terms.fee),
      liquidity: terms.liquidity,
      executedAt: terms.executedAt,
    });
    // Undefined: a concurrent request stored this execution id first; the next round treats ours as its retry.
    if (pending) return settlePendingFill(deps, pending);
  }
  throw new Error(`execution id ${terms.executionId} was stored and dropped ${MAX_RACE_ROUNDS} times while this request ran`);
}

/**
 * Finishes a pending fill: applies it to its order (idempotent per fill id) and marks it APPLIED, or
 * drops it when orders refuses it. Used by requests and by the recovery sweeper alike; concurrent
 * settlements of one fill agree, because orders gives one fill id one verdict for good.
 */
export async function settlePendingFill(deps: RecordingDeps, fill: FillRow): Promise<Result<FillRow>> {
  let verdict;
  try {
    verdict = await applyFillToOrder(deps.orders, {
      fillId: fill.id,
      orderSubmissionId: fill.order_submission_id,
      quantity: formatDecimal(fill.quantity),
      price: formatDecimal(fill.price),
    });
  } catch (error) {
    if (!(error instanceof SubgraphUnavailableError)) throw error;
    deps.log.warn({ err: error, fillId: fill.id }, 'orders unavailable while applying a fill; left pending for recovery');
    return fail('TEMPORARILY_UNAVAILABLE', UNAVAILABLE_PENDING);
  }

  const settlement = settlementOf(
    verdict.outcome,
    { orderSubmissionId: fill.order_submission_id, quantity: fill.quantity },
    verdict.orderSubmission,
  );
  if (settlement.kind === 'refused') {
    await deletePendingFill(deps.db, fill.account_id, fill.id);
    return { ok: false, error: settlement.error };
  }
  const applied = await markFillApplied(deps.db, fill.account_id, fill.id);
  // Only a refused fill is ever deleted, and orders never both applies and refuses one fill id.
  if (!applied) throw new Error(`fill ${fill.id} was applied by orders but is no longer stored`);
  return ok(applied);
}

function recordedTermsOf(fill: FillRow) {
  return {
    orderSubmissionId: fill.order_submission_id,
    quantity: fill.quantity,
    price: fill.price,
    fee: fill.fee,
    liquidity: fill.liquidity,
    executedAt: fill.executed_at,
  };
}
