import type { Result } from '@ots/shared/errors';
import { parseUuid, receiveId } from '@ots/shared/ids';
import { decodeKeysetCursor, encodeKeysetCursor, pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar } from '@ots/shared/scalars';
import type { StrategiesContext } from './context.ts';
import type { StatusAction } from './domain.ts';
import type { MutationPauseStrategyArgs, Resolvers } from './generated/resolvers-types.ts';
import { changeStrategyStatus, createStrategy, updateStrategy } from './operations.ts';
import { listStrategies, type StrategyRow } from './repository.ts';

/** A strategy of the caller's account, or null for an absent, foreign or non-UUID id. */
async function loadStrategy(context: StrategiesContext, id: string): Promise<StrategyRow | null> {
  const strategyId = parseUuid(id);
  return strategyId ? context.strategyById.load(strategyId) : null;
}

function toPayload(result: Result<StrategyRow>) {
  return result.ok ? { strategy: result.value, error: null } : { strategy: null, error: result.error };
}

const LIST_ORDERING = 'strategies:created_at_desc';

const cursorOf = (row: StrategyRow) => encodeKeysetCursor(LIST_ORDERING, { at: row.created_at, id: row.id });

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
        after: decodeKeysetCursor(LIST_ORDERING, args.after),
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
