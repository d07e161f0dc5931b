import type { Uuid } from '@ots/shared/ids';
import { loaderById } from '@ots/shared/loaders';
import { callerScope } from '@ots/shared/scope';
import type { AccountKeysetCursors, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { StrategiesScope } from './operations.ts';
import { findStrategiesByIds, type StrategiesDb, type StrategyRow } from './repository.ts';

export interface StrategiesContext extends BaseContext {
  /** The caller's rows: every use case runs in it. */
  scope: StrategiesScope;
  /** Per request and scoped to the caller's account: a batch of look-ups (e.g. every order's strategy) is one query. */
  strategyById: ReturnType<typeof loaderById<StrategyRow, Uuid>>;
  /** listStrategies' cursors, sealed to the caller's account. */
  strategyCursors: AccountKeysetCursors;
}

export function createStrategiesContext(base: BaseContext, db: StrategiesDb, strategyCursors: SealedKeysetCursors): StrategiesContext {
  return {
    ...base,
    scope: callerScope(db, base),
    strategyById: loaderById((ids: readonly Uuid[]) => findStrategiesByIds(db, base.caller.accountId, ids)),
    strategyCursors: strategyCursors.forAccount(base.caller.accountId),
  };
}
