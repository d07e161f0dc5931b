import type { Uuid } from '@ots/shared/ids';
import { loaderById } from '@ots/shared/loaders';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { AccountKeysetCursors, SealedFeedCursors, SealedKeysetCursors } from '@ots/shared/sealed-cursors';
import { findEndpointsByIds, findEventsByIds, type EndpointRow, type EventRow, type EventsDb } from './repository.ts';

export interface EventsContext extends BaseContext {
  db: EventsDb;
  production: boolean;
  secretKey: Buffer;
  /** Seals and opens the feed's cursors (shared/src/sealed-cursors.ts). */
  cursors: SealedFeedCursors;
  /** An endpoint's delivery cursors, sealed to the caller's account. */
  deliveryCursors: AccountKeysetCursors;
  now(): Date;
  /** Per request and scoped to the caller's account. */
  eventById: ReturnType<typeof loaderById<EventRow, Uuid>>;
  endpointById: ReturnType<typeof loaderById<EndpointRow, Uuid>>;
}

export function createEventsContext(base: BaseContext, deps: { db: EventsDb; production: boolean; secretKey: Buffer; cursors: SealedFeedCursors; deliveryCursors: SealedKeysetCursors; now(): Date }): EventsContext {
  const accountId = base.caller.accountId;
  return {
    ...base,
    ...deps,
    deliveryCursors: deps.deliveryCursors.forAccount(accountId),
    eventById: loaderById((ids: readonly Uuid[]) => findEventsByIds(deps.db, accountId, ids)),
    endpointById: loaderById((ids: readonly Uuid[]) => findEndpointsByIds(deps.db, accountId, ids)),
  };
}
