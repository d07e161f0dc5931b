import type { AccountKeysetCursors } from '@ots/shared/sealed-cursors';
import { formatDecimal } from '@ots/shared/decimal';
import { fail, ok, type Result } from '@ots/shared/errors';
import type { KeysetPosition } from '@ots/shared/pagination';
import { toConnection, type Connection } from '@ots/shared/pagination';
import type { Scope } from '@ots/shared/scope';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import { duplicateExecutionId, isSameFill, orderNotFound, settlementOf, validateRecordFill, type FillFilter, type FillTerms, type RecordFillInput } from './domain.ts';
import { appliedRowOf, fillObject, keptFillOf, recordedTermsOf, type FillObject } from './mappers.ts';
import { applyFillToOrder, type AppliedFillVerdict, type AppliedOrder, type OrdersLink } from './orders-client.ts';
import { findFillByExecutionId, keepFills, listAppliedFills, type AppliedFillRow, type FillsDb } from './repository.ts';

/** The fills use cases, each `(scope, request)`; recording a fill also calls the orders subgraph. */
export interface FillsScope extends Scope<FillsDb> {
  orders: OrdersLink;
}

/** No field: nothing the client sent is wrong. */
const UNAVAILABLE =
  'The orders service did not answer in time: the fill may or may not have been recorded. ' +
  'A retry with the same executionId is safe and returns the outcome, applying the fill at most once.';

/** A fill recorded on its order, and the order in its state after it, as orders answered. */
export interface RecordedFill {
  fill: AppliedFillRow;
  order: AppliedOrder;
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
export async function recordFill(scope: FillsScope, input: RecordFillInput): Promise<Result<RecordedFill>> {
  const validated = validateRecordFill(input, scope.now().getTime());
  if (!validated.ok) return validated;
  const terms = validated.value;
  if (terms.orderSubmissionId.uuid === undefined) {
    // An id that is not a UUID names no order, and retries no recorded fill: no call to orders.
    const recorded = await findFillByExecutionId(scope.db, scope.accountId, terms.executionId);
    return { ok: false, error: recorded ? duplicateExecutionId(terms.executionId) : orderNotFound(terms.orderSubmissionId.sent) };
  }
  const fillInput = {
    executionId: terms.executionId,
    orderSubmissionId: terms.orderSubmissionId.sent,
    quantity: formatDecimal(terms.quantity),
    price: formatDecimal(terms.price),
    fee: formatDecimal(terms.fee),
    liquidity: terms.liquidity,
    executedAt: terms.executedAt?.toISOString() ?? null,
    checksRecordedBeforeUpgrade: true,
  };
  let verdict: AppliedFillVerdict;
  try {
    verdict = await applyFillToOrder(scope.orders, fillInput);
    if (verdict.outcome === 'MAYBE_RECORDED_BEFORE_UPGRADE') {
      // The account has fills orders recorded before it kept execution ids, not yet backfilled: this may be one of them, and this subgraph keeps every one.
      const keptBefore = await findFillByExecutionId(scope.db, scope.accountId, terms.executionId);
      if (keptBefore) return answerRecordedBefore(keptBefore, terms, verdict.orderSubmission ?? null);
      // Sent only now, so that an orders release without the field still takes every first call during a rolling upgrade.
      verdict = await applyFillToOrder(scope.orders, { ...fillInput, notRecordedBeforeUpgrade: true });
    }
  } catch (error) {
    if (!(error instanceof SubgraphUnavailableError)) throw error;
    scope.log.warn({ err: error, executionId: terms.executionId }, 'orders unavailable while recording a fill');
    return fail('TEMPORARILY_UNAVAILABLE', UNAVAILABLE);
  }
  if (verdict.outcome === 'MAYBE_RECORDED_BEFORE_UPGRADE') throw new Error(`orders left execution id ${terms.executionId} undecided though this subgraph keeps no fill with it`);

  const { fill, orderSubmission: order } = verdict;
  if (!fill || !order) {
    const settlement = settlementOf(verdict.outcome, { orderSubmissionId: terms.orderSubmissionId.sent, quantity: terms.quantity }, order ?? null);
    if (settlement.kind === 'refused') return { ok: false, error: settlement.error };
    throw new Error(`orders answered ${verdict.outcome} for execution id ${terms.executionId} without the fill and its order`);
  }
  const kept = keptFillOf(scope.accountId, fill, order);
  // Kept whatever the request: a retry, or a request that reuses the execution id, still brings a recorded fill that may be missing here.
  await keepFills(scope.db, [kept]);
  const row = appliedRowOf(kept);
  if (verdict.outcome === 'ALREADY_APPLIED' && !isSameFill(recordedTermsOf(row), terms)) return { ok: false, error: duplicateExecutionId(terms.executionId) };
  return ok({ fill: row, order });
}

/**
 * A fill kept here, recorded before orders kept execution ids: a retry of it is answered with it and
 * with the order as orders answered (the order asked for, which a retry names), anything else is a
 * reuse of its execution id.
 */
function answerRecordedBefore(kept: AppliedFillRow, terms: FillTerms, order: AppliedOrder | null): Result<RecordedFill> {
  if (!order || !isSameFill(recordedTermsOf(kept), terms)) return { ok: false, error: duplicateExecutionId(terms.executionId) };
  return ok({ fill: kept, order });
}

/** A listFills page's arguments once the resolver has parsed them. */
export interface ListRequest {
  /** Undefined when no fill can match. */
  filter: FillFilter | undefined;
  after: KeysetPosition | undefined;
  size: number;
  /** Seals the cursors to the caller's account. */
  cursors: AccountKeysetCursors;
}

export async function listFills(scope: Scope<FillsDb>, request: ListRequest): Promise<Connection<FillObject>> {
  const rows = request.filter
    ? await listAppliedFills(scope.db, scope.accountId, request.filter, { after: request.after, limit: request.size + 1 })
    : [];
  return toConnection(rows.map(fillObject), request.size, (fill) => request.cursors.encode({ at: fill.executedAt, id: fill.id }));
}
