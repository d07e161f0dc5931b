import { Decimal } from '@ots/shared/decimal';
import { averageFillPrice, remainingQuantity } from './domain.ts';
import { fillStateOf } from './operations.ts';
import type { OrderRow } from './repository.ts';

// The parents of the schema's types (codegen.ts's `mappers`): kept apart from resolvers.ts, which
// imports the generated types that import these.

/** The OrderSubmission object as the schema shows it. */
export function orderView(row: OrderRow) {
  const fillState = fillStateOf(row);
  return {
    id: row.id,
    clientOrderId: row.client_order_id,
    // A reference the strategies subgraph resolves; orders only knows the id it stored.
    strategy: row.strategy_id === null ? null : { __typename: 'Strategy' as const, id: row.strategy_id },
    symbol: row.symbol,
    side: row.side,
    type: row.type,
    timeInForce: row.time_in_force,
    quantity: fillState.quantity,
    limitPrice: row.limit_price === null ? null : new Decimal(row.limit_price),
    stopPrice: row.stop_price === null ? null : new Decimal(row.stop_price),
    status: row.status,
    filledQuantity: fillState.filledQuantity,
    remainingQuantity: remainingQuantity(fillState),
    averageFillPrice: averageFillPrice(fillState),
    submittedAt: row.submitted_at,
    updatedAt: row.updated_at,
    cancelledAt: row.cancelled_at,
    replacedAt: row.replaced_at,
    replacedBy: row.replaced_by,
    replacesOrderSubmission: row.replaces_id,
  };
}

/** The parent of OrderSubmission's own resolvers: every row becomes a GraphQL object through `orderView`. */
export type OrderView = ReturnType<typeof orderView>;
