import type { AppliedFillRow } from './repository.ts';

// The parents of the schema's types (codegen.ts's `mappers`): kept apart from resolvers.ts, which
// imports the generated types that import these.

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
