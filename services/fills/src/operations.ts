import type { CallerIdentity } from '@ots/shared/assertion';
import { formatDecimal } from '@ots/shared/decimal';
import { fail, ok, type Result } from '@ots/shared/errors';
import { parseUuid, type Uuid } from '@ots/shared/ids';
import type { Logger } from '@ots/shared/logger';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import { duplicateExecutionId, isSameFill, orderNotFound, settlementOf, validateRecordFill, type OrderView, type RecordFillInput } from './domain.ts';
import { applyFillToOrder, type AppliedFillVerdict, type OrdersLink } from './orders-client.ts';
import { findFillByExecutionId, keepFills, type AppliedFillRow, type FillsDb, type KeptFill } from './repository.ts';

export interface RecordingDeps {
  db: FillsDb;
  orders: OrdersLink;
  log: Logger;
}

/** No field: nothing the client sent is wrong. */
const UNAVAILABLE =
  'The orders service did not answer in time: the fill may or may not have been recorded. ' +
  'A retry with the same executionId is safe and returns the outcome, applying the fill at most once.';

/** A fill recorded on its order, and the order in its state after it, as orders answered. */
export interface RecordedFill {
  fill: AppliedFillRow;
  order: OrderView;
}

/**
 * recordFill: the order's owner decides. One call to orders' `applyFill`, which decides the fill
 * on the order by its transition table and, if the order takes it, records the fill, the order's
 * change and both events (the order's and `fill.recorded`) in one statement; a fill whose execution
 * id it has recorded already comes back as recorded, nothing applied again. Then one statement here
 * keeps the fill as orders recorded it (idempotent by the fill's id), so that it is readable through
 * `fill`, `listFills` and positions as soon as recordFill answers. Two commits, one call.
 *
 * If this process fails between orders' commit and its own (or orders' answer is lost), nothing is
 * lost: a retry with the same executionId gets the recorded fill from orders and keeps it, and
 * without a retry the `fill.recorded` event in orders' outbox reaches this subgraph's recovery route
 * (`recovery.ts`), which keeps it the same way.
 */
export async function recordFill(deps: RecordingDeps, caller: CallerIdentity, input: RecordFillInput): Promise<Result<RecordedFill>> {
  const validated = validateRecordFill(input, Date.now());
  if (!validated.ok) return validated;
  const terms = validated.value;
  if (terms.orderSubmissionId.uuid === undefined) {
    // An id that is not a UUID names no order, and retries no recorded fill: no call to orders.
    const recorded = await findFillByExecutionId(deps.db, caller.accountId, terms.executionId);
    return { ok: false, error: recorded ? duplicateExecutionId(terms.executionId) : orderNotFound(terms.orderSubmissionId.sent) };
  }
  let verdict: AppliedFillVerdict;
  try {
    verdict = await applyFillToOrder(deps.orders, {
      executionId: terms.executionId,
      orderSubmissionId: terms.orderSubmissionId.sent,
      quantity: formatDecimal(terms.quantity),
      price: formatDecimal(terms.price),
      fee: formatDecimal(terms.fee),
      liquidity: terms.liquidity,
      executedAt: terms.executedAt?.toISOString() ?? null,
    });
  } catch (error) {
    if (!(error instanceof SubgraphUnavailableError)) throw error;
    deps.log.warn({ err: error, executionId: terms.executionId }, 'orders unavailable while recording a fill');
    return fail('TEMPORARILY_UNAVAILABLE', UNAVAILABLE);
  }

  const { fill, orderSubmission: order } = verdict;
  if (!fill || !order) {
    const settlement = settlementOf(verdict.outcome, { orderSubmissionId: terms.orderSubmissionId.sent, quantity: terms.quantity }, order ?? null);
    if (settlement.kind === 'refused') return { ok: false, error: settlement.error };
    throw new Error(`orders answered ${verdict.outcome} for execution id ${terms.executionId} without the fill and its order`);
  }
  const kept = keptFillOf(caller.accountId, fill, order as OrderView);
  // Kept whatever the request: a retry, or a request that reuses the execution id, still brings a recorded fill that may be missing here.
  await keepFills(deps.db, [kept]);
  const row = appliedRowOf(kept);
  if (verdict.outcome === 'ALREADY_APPLIED' && !isSameFill(recordedTermsOf(row), terms)) return { ok: false, error: duplicateExecutionId(terms.executionId) };
  return ok({ fill: row, order: order as OrderView });
}

function keptFillOf(accountId: string, fill: NonNullable<AppliedFillVerdict['fill']>, order: OrderView): KeptFill {
  return {
    id: uuidOf(fill.id),
    accountId,
    orderSubmissionId: uuidOf(order.id),
    strategyId: order.strategy?.id ?? null,
    symbol: order.symbol,
    side: order.side,
    executionId: fill.executionId,
    quantity: fill.quantity,
    price: fill.price,
    fee: fill.fee,
    liquidity: fill.liquidity,
    executedAt: new Date(fill.executedAt),
    recordedAt: new Date(fill.recordedAt),
  };
}

function uuidOf(id: string): Uuid {
  const uuid = parseUuid(id);
  if (!uuid) throw new Error(`orders answered an id that is not a UUID: ${id}`);
  return uuid;
}

/** The row a kept fill is, as every read returns it. */
function appliedRowOf(fill: KeptFill): AppliedFillRow {
  return {
    id: fill.id,
    account_id: fill.accountId,
    order_submission_id: fill.orderSubmissionId,
    strategy_id: fill.strategyId,
    symbol: fill.symbol,
    side: fill.side,
    execution_id: fill.executionId,
    quantity: fill.quantity,
    price: fill.price,
    fee: fill.fee,
    liquidity: fill.liquidity,
    executed_at: fill.executedAt,
    recorded_at: fill.recordedAt,
    status: 'APPLIED',
    applied_at: fill.recordedAt,
  };
}

function recordedTermsOf(fill: AppliedFillRow) {
  return {
    orderSubmissionId: fill.order_submission_id,
    quantity: fill.quantity,
    price: fill.price,
    fee: fill.fee,
    liquidity: fill.liquidity,
    executedAt: fill.executed_at,
  };
}
