import { badUserInput, type Result } from '@ots/shared/errors';
import { parseUuid, receiveId, type Uuid } from '@ots/shared/ids';
import { loaderById } from '@ots/shared/loaders';
import { decodeCursor, encodeCursor, pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar } from '@ots/shared/scalars';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { StatusAction } from './domain.ts';
import type { MutationPauseStrategyArgs, Resolvers } from './generated/resolvers-types.ts';
import { changeStrategyStatus, createStrategy, updateStrategy } from './operations.ts';
import { findStrategiesByIds, listStrategies, type ListPosition, type StrategiesDb, type StrategyRow } from './repository.ts';

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

/** A strategy of the caller's account, or null for an absent, foreign or non-UUID id. */
async function loadStrategy(context: StrategiesContext, id: string): Promise<StrategyRow | null> {
  const strategyId = parseUuid(id);
  return strategyId ? context.strategyById.load(strategyId) : null;
}

function toPayload(result: Result<StrategyRow>) {
  return result.ok ? { strategy: result.value, error: null } : { strategy: null, error: result.error };
}

const LIST_ORDERING = 'strategies:created_at_desc';

function cursorOf(row: StrategyRow): string {
  return encodeCursor(LIST_ORDERING, [row.created_at.toISOString(), row.id]);
}

/** The position a cursor names; a cursor whose keys were tampered with is refused like any foreign cursor. */
function positionAfter(after: string | null | undefined): ListPosition | undefined {
  const keys = decodeCursor(after, LIST_ORDERING, 2);
  if (!keys) return undefined;
  const [createdAt, key] = keys as [string, string];
  const date = new Date(createdAt);
  const id = parseUuid(key);
  if (Number.isNaN(date.getTime()) || date.toISOString() !== createdAt || !id) {
    throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
  }
  return { createdAt: date, id };
}

function statusMutation(action: StatusAction) {
  return async (_: unknown, { id }: MutationPauseStrategyArgs, { db, caller }: StrategiesContext) =>
    toPayload(await changeStrategyStatus(db, caller.accountId, receiveId(id), action));
}

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  Query: {
    strategy: (_, { id }, context) => loadStrategy(context, id),
    listStrategies: async (_, args, { db, caller }) => {
      const size = pageSize(args.first);
      const rows = await listStrategies(db, caller.accountId, {
        statuses: args.filter?.status ?? undefined,
        after: positionAfter(args.after),
        limit: size + 1,
      });
      return toConnection(rows, size, cursorOf);
    },
  },
  Mutation: {
    createStrategy: async (_, { input }, { db, caller }) =>
      toPayload(await createStrategy(db, caller.accountId, input)),
    updateStrategy: async (_, { id, input }, { db, caller }) =>
      toPayload(await updateStrategy(db, caller.accountId, receiveId(id), input)),
    pauseStrategy: statusMutation('pause'),
    resumeStrategy: statusMutation('resume'),
    archiveStrategy: statusMutation('archive'),
  },
  Strategy: {
    __resolveReference: (reference, context) => loadStrategy(context, reference.id),
    createdAt: (row) => row.created_at,
    updatedAt: (row) => row.updated_at,
  },
};
