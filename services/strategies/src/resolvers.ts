import type { Result } from '@ots/shared/errors';
import { parseUuid, receiveId } from '@ots/shared/ids';
import { cursorTag, pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar } from '@ots/shared/scalars';
import type { StrategiesContext } from './context.ts';
import type { StatusAction } from './domain.ts';
import type { MutationPauseStrategyArgs, Resolvers } from './generated/resolvers-types.ts';
import { strategyView, type StrategyView } from './mappers.ts';
import { changeStrategyStatus, createStrategy, listStrategies, updateStrategy } from './operations.ts';
import type { StrategyRow } from './repository.ts';

/** A strategy of the caller's account, or null for an absent, foreign or non-UUID id. */
async function loadStrategy(context: StrategiesContext, id: string): Promise<StrategyView | null> {
  const strategyId = parseUuid(id);
  const row = strategyId ? await context.strategyById.load(strategyId) : null;
  return row ? strategyView(row) : null;
}

function toPayload(result: Result<StrategyRow>) {
  return result.ok ? { strategy: strategyView(result.value), error: null } : { strategy: null, error: result.error };
}

/** The tag of listStrategies' cursors; the former one is still accepted. */
export const LIST_ORDERING = cursorTag('strategies', 'CREATED_AT_DESC', 'strategies:created_at_desc');


function statusMutation(action: StatusAction) {
  return async (_: unknown, { id }: MutationPauseStrategyArgs, { scope }: StrategiesContext) =>
    toPayload(await changeStrategyStatus(scope, { id: receiveId(id), action }));
}

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  Query: {
    strategy: (_, { id }, context) => loadStrategy(context, id),
    listStrategies: async (_, args, { scope, strategyCursors }) => {
      const size = pageSize(args.first);
      const rows = await listStrategies(scope, {
        statuses: args.filter?.status ?? undefined,
        after: strategyCursors.decode(args.after),
        size,
      });
      return toConnection(rows.map(strategyView), size, (strategy: StrategyView) => strategyCursors.encode({ at: strategy.createdAt, id: strategy.id }));
    },
  },
  Mutation: {
    createStrategy: async (_, { input }, { scope }) => toPayload(await createStrategy(scope, input)),
    updateStrategy: async (_, { id, input }, { scope }) => toPayload(await updateStrategy(scope, { ...input, id: receiveId(id) })),
    pauseStrategy: statusMutation('pause'),
    resumeStrategy: statusMutation('resume'),
    archiveStrategy: statusMutation('archive'),
  },
  Strategy: {
    __resolveReference: (reference, context) => loadStrategy(context, reference.id),
  },
};
