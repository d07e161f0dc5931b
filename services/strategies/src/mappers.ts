import type { StrategyRow } from './repository.ts';

/**
 * The one mapping of a strategy: its row on the wire, which is both the data of its events
 * (contract section 6) and the schema's object (the parent codegen.ts's `mappers` names). A field of
 * the strategy is added here once, beside the SDL. Kept apart from resolvers.ts, which imports the
 * generated types that import `StrategyView`.
 */
export function strategyView(row: StrategyRow) {
  return { id: row.id, name: row.name, description: row.description, status: row.status, createdAt: row.created_at, updatedAt: row.updated_at };
}

export type StrategyView = ReturnType<typeof strategyView>;
