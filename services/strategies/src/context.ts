import type { Uuid } from '@ots/shared/ids';
import { loaderById } from '@ots/shared/loaders';
import type { BaseContext } from '@ots/shared/subgraph-server';
import { findStrategiesByIds, type StrategiesDb, type StrategyRow } from './repository.ts';

export interface StrategiesContext extends BaseContext {
  db: StrategiesDb;
  /** Per request and scoped to the caller's account: a batch of look-ups (e.g. every order's strategy) is one query. */
  strategyById: ReturnType<typeof loaderById<StrategyRow, Uuid>>;
}

export function createStrategiesContext(base: BaseContext, db: StrategiesDb): StrategiesContext {
  return {
    ...base,
    db,
    strategyById: loaderById((ids: readonly Uuid[]) => findStrategiesByIds(db, base.caller.accountId, ids)),
  };
}
