import { parseUuid, type Uuid } from '@ots/shared/ids';
import type { AppliedFillVerdict, AppliedOrder } from './orders-client.ts';
import type { AppliedFillRow, KeptFill } from './repository.ts';

/**
 * The one mapping of a fill: orders' answer to the fill kept here (`keptFillOf`), the kept fill to
 * its row, and the row to the schema's object (`fillObject`, the parent codegen.ts's `mappers`
 * names). Kept apart from resolvers.ts, which imports the generated types that import these.
 */

/** The parent of Fill's own resolvers. */
export interface FillObject {
  id: string;
  orderSubmissionId: string;
  executionId: string;
  symbol: string;
  side: string;
  quantity: string;
  price: string;
  fee: string;
  liquidity: string;
  executedAt: Date;
  recordedAt: Date;
}

export function fillObject(row: AppliedFillRow): FillObject {
  return {
    id: row.id,
    orderSubmissionId: row.order_submission_id,
    executionId: row.execution_id,
    symbol: row.symbol,
    side: row.side,
    quantity: row.quantity,
    price: row.price,
    fee: row.fee,
    liquidity: row.liquidity,
    executedAt: row.executed_at,
    recordedAt: row.recorded_at,
  };
}

export function keptFillOf(accountId: string, fill: NonNullable<AppliedFillVerdict['fill']>, order: AppliedOrder): KeptFill {
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
export function appliedRowOf(fill: KeptFill): AppliedFillRow {
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

export function recordedTermsOf(fill: AppliedFillRow) {
  return {
    orderSubmissionId: fill.order_submission_id,
    quantity: fill.quantity,
    price: fill.price,
    fee: fill.fee,
    liquidity: fill.liquidity,
    executedAt: fill.executed_at,
  };
}
