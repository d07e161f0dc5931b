import type { CallerIdentity } from '@ots/shared/assertion';
import { formatDecimal } from '@ots/shared/decimal';
import { fail, ok, type Result } from '@ots/shared/errors';
import { newId } from '@ots/shared/ids';
import type { Logger } from '@ots/shared/logger';
import { outboxRow } from '@ots/shared/outbox';
import { SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import {
  duplicateExecutionId,
  isSameFill,
  orderNotFound,
  settlementOf,
  validateRecordFill,
  type OrderView,
  type RecordFillInput,
} from './domain.ts';
import { applyFillToOrder, withDeadline, type OrdersLink } from './orders-client.ts';
import {
  deletePendingFill,
  findAppliedFills,
  findFillByExecutionId,
  insertPendingFill,
  applyPendingFill,
  type AppliedFillRow,
  type FillRow,
  type FillsDb,
} from './repository.ts';

export interface RecordingDeps {
  db: FillsDb;
  /**
   * For a request, `timeoutMs` is the budget of the whole recordFill: its call to orders gets what is
   * left of it (see `withDeadline`). The sweeper's link has none: each of its calls gets the timeout.
   */
  orders: OrdersLink;
  log: Logger;
}

/** How often a request re-reads after losing an execution-id race to a fill that was then refused and dropped. */
const MAX_RACE_ROUNDS = 3;

/** No field: nothing the client sent is wrong. */
const UNAVAILABLE_PENDING =
  'The orders service did not answer in time. The fill is stored and recovery will apply it to the order or refuse it; ' +
  'a retry with the same executionId is safe and returns the outcome.';

/** A fill applied to its order, and the order in its state after it, as orders answered. */
export interface RecordedFill {
  fill: AppliedFillRow;
  order: OrderView;
}

/**
 * recordFill crosses two databases: orders owns the order's state, fills owns the fill. The fill is
 * first stored PENDING (invisible to reads), then applied to the order through orders' fill route
 * (`applyFillRoute`), which is idempotent per fill id and alone decides whether the order takes the
 * fill, then marked APPLIED. A crash or timeout anywhere leaves a pending fill that the next retry or the recovery
 * sweeper settles the same way, so the two sides converge.
 *
 * One call to orders per request, whatever the path: there is no read of the order beforehand (the
 * verdict brings the order's details, and a refused fill's pending row is simply dropped), and the
 * answer carries the order's new state, which the payload hands on (`@provides`), so the gateway
 * does not fetch it again.
 */
export async function recordFill(requestDeps: RecordingDeps, caller: CallerIdentity, input: RecordFillInput): Promise<Result<RecordedFill>> {
  // A deadline for the call to orders, counted from the start of the request.
  const deps = { ...requestDeps, orders: withDeadline(requestDeps.orders) };
  const validated = validateRecordFill(input, Date.now());
  if (!validated.ok) return validated;
  const terms = validated.value;
  // An id that is not a UUID names no order; it is still checked against a recorded execution id first.
  const orderSubmissionId = terms.orderSubmissionId.uuid;

  for (let round = 0; round < MAX_RACE_ROUNDS; round += 1) {
    // The common case first: a new execution id costs one statement here.
    const pending = orderSubmissionId
      ? await insertPendingFill(deps.db, {
          id: newId(),
          accountId: caller.accountId,
          apiKeyId: caller.apiKeyId,
          orderSubmissionId,
          executionId: terms.executionId,
          quantity: formatDecimal(terms.quantity),
          price: formatDecimal(terms.price),
          fee: formatDecimal(terms.fee),
          liquidity: terms.liquidity,
          executedAt: terms.executedAt,
        })
      : undefined;
    if (pending) return settlePendingFill(deps, pending);

    const existing = await findFillByExecutionId(deps.db, caller.accountId, terms.executionId);
    if (existing) {
      if (!isSameFill(recordedTermsOf(existing), terms)) return { ok: false, error: duplicateExecutionId(terms.executionId) };
      // Applied or pending alike: orders answers a fill id it has counted with ALREADY_APPLIED and the order's state.
      return settlePendingFill(deps, existing);
    }
    if (!orderSubmissionId) return { ok: false, error: orderNotFound(terms.orderSubmissionId.sent) };
    // A concurrent request stored this execution id and it was refused and dropped since: judged afresh.
  }
  throw new Error(`execution id ${terms.executionId} was stored and dropped ${MAX_RACE_ROUNDS} times while this request ran`);
}

/**
 * Finishes a stored fill: applies it to its order (idempotent per fill id) and marks it APPLIED
 * with the order's details, or drops it when orders refuses it. Used by requests and by the
 * recovery sweeper alike; concurrent settlements of one fill agree, because orders gives one fill
 * id one verdict for good.
 */
export async function settlePendingFill(deps: RecordingDeps, fill: FillRow): Promise<Result<RecordedFill>> {
  let verdict;
  try {
    verdict = await applyFillToOrder(deps.orders, {
      fillId: fill.id,
      orderSubmissionId: fill.order_submission_id,
      quantity: formatDecimal(fill.quantity),
      price: formatDecimal(fill.price),
      executedAt: fill.executed_at.toISOString(),
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
  const order = verdict.orderSubmission;
  if (!order) throw new Error(`orders applied fill ${fill.id} but did not return its order`);
  const details = { strategyId: order.strategy?.id ?? null, symbol: order.symbol, side: order.side };
  // The fill turns APPLIED and its event is written in one statement; a settlement that finds it
  // applied already (a concurrent request or the sweeper got there first) writes no second event.
  // The event takes the fill's id: a settlement redone after a crash (applyPendingFill says why one
  // may be) reports the fill under the same id, and the events service keeps one copy.
  const event = outboxRow({
    id: fill.id,
    accountId: fill.account_id,
    type: 'fill.recorded',
    occurredAt: fill.recorded_at,
    data: fillEventData({ ...fill, symbol: details.symbol, side: details.side }, order),
  });
  const applied =
    (await applyPendingFill(deps.db, fill.account_id, fill.id, details, event)) ??
    (await findAppliedFills(deps.db, fill.account_id, [fill.id]))[0];
  // Only a refused fill is ever deleted, and orders never both applies and refuses one fill id.
  if (!applied) throw new Error(`fill ${fill.id} was applied by orders but is no longer stored`);
  return ok({ fill: applied, order });
}

/**
 * The fill as the API shows it and, under `orderSubmission`, its order as orders answered the
 * fill's application (contract section 6): decimals as canonical strings, references as ids.
 */
export function fillEventData(fill: AppliedFillRow, order: OrderView) {
  const { strategy, replacesOrderSubmission, replacedBy, ...orderFields } = order;
  return {
    id: fill.id,
    orderSubmissionId: fill.order_submission_id,
    executionId: fill.execution_id,
    symbol: fill.symbol,
    side: fill.side,
    quantity: formatDecimal(fill.quantity),
    price: formatDecimal(fill.price),
    fee: formatDecimal(fill.fee),
    liquidity: fill.liquidity,
    executedAt: fill.executed_at,
    recordedAt: fill.recorded_at,
    orderSubmission: {
      ...orderFields,
      strategyId: strategy?.id ?? null,
      replacesOrderSubmissionId: replacesOrderSubmission?.id ?? null,
      replacedByOrderSubmissionId: replacedBy?.id ?? null,
    },
  };
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
