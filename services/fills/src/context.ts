import type { AccountKeysetCursors, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import type DataLoader from 'dataloader';
import type { Uuid } from '@ots/shared/ids';
import { loaderById, loaderOfGroups } from '@ots/shared/loaders';
import { callerScope } from '@ots/shared/scope';
import type { ServiceRuntime } from '@ots/shared/service';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { FillsScope } from './operations.ts';
import {
  findAppliedFills,
  findAppliedFillsOfOrders,
  findAppliedFillsOfStrategies,
  type AppliedFillRow,
  type FillsDatabase,
  type FillsDb,
  type PositionFillRow,
} from './repository.ts';

/** Keyed by the ids the resolvers parsed, so a loader's batch is always a list of UUIDs. */
export interface FillsLoaders {
  appliedFillById: DataLoader<Uuid, AppliedFillRow | null>;
  appliedFillsByOrder: DataLoader<Uuid, AppliedFillRow[]>;
  appliedFillsByStrategy: DataLoader<Uuid, PositionFillRow[]>;
}

export interface FillsContext extends BaseContext {
  /** The caller's rows, and the orders subgraph called with this request's assertion: every use case runs in it. */
  scope: FillsScope;
  loaders: FillsLoaders;
  /** listFills' cursors, sealed to the caller's account. */
  fillCursors: AccountKeysetCursors;
}

/** Per request: each loader turns the lookups of one gateway fetch into one query, scoped to the caller. */
export function createLoaders(db: FillsDb, accountId: string): FillsLoaders {
  return {
    appliedFillById: loaderById((ids: readonly Uuid[]) => findAppliedFills(db, accountId, ids)),
    appliedFillsByOrder: loaderOfGroups(
      (orderIds: readonly Uuid[]) => findAppliedFillsOfOrders(db, accountId, orderIds),
      (fill) => fill.order_submission_id,
    ),
    appliedFillsByStrategy: loaderOfGroups(
      (strategyIds: readonly Uuid[]) => findAppliedFillsOfStrategies(db, accountId, strategyIds),
      (fill) => fill.strategy_id ?? '',
    ),
  };
}

export function createFillsContext(base: BaseContext, { db, config }: ServiceRuntime<FillsDatabase, 'fills'>, fillCursors: SealedKeysetCursors): FillsContext {
  return {
    ...base,
    scope: {
      ...callerScope(db, base),
      orders: {
        url: config.subgraphUrls.orders,
        // Half the subgraph fetch timeout, as orders gives its strategy check: the gateway abandons the
        // fetch of fills after the full timeout, so a slow or silent orders must be given up on sooner
        // for the client to receive TEMPORARILY_UNAVAILABLE rather than a top-level error blaming fills.
        timeoutMs: Math.floor(config.limits.subgraphTimeoutMs / 2),
        assertion: base.assertion,
        requestId: base.requestId,
      },
    },
    loaders: createLoaders(db, base.caller.accountId),
    fillCursors: fillCursors.forAccount(base.caller.accountId),
  };
}
