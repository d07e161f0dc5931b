import { DateTimeScalar } from '@ots/shared/scalars';
import type { Resolvers } from './generated/resolvers-types.ts';
import { apiKeyOf } from './mappers.ts';
import { findAccount, findApiKeyOfAccount, findReplacedApiKey } from './repository.ts';

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  Query: {
    viewer: () => ({}),
  },
  Viewer: {
    account: async (_, __, { db, caller }) => {
      const account = await findAccount(db, caller.accountId);
      if (!account) throw new Error(`asserted account ${caller.accountId} does not exist`);
      return { id: account.id, name: account.name, createdAt: account.created_at };
    },
    apiKey: async (_, __, { db, caller }) => {
      const key = await findApiKeyOfAccount(db, caller.accountId, caller.apiKeyId);
      if (!key) throw new Error(`asserted key ${caller.apiKeyId} does not exist`);
      return apiKeyOf(key);
    },
  },
  ApiKey: {
    replacesApiKey: async (key, _, { db, caller }) => {
      const replaced = await findReplacedApiKey(db, caller.accountId, key.id);
      return replaced ? apiKeyOf(replaced) : null;
    },
    replacedByApiKey: async (key, _, { db, caller }) => {
      const replacedBy = key.replacedByKeyId && (await findApiKeyOfAccount(db, caller.accountId, key.replacedByKeyId));
      return replacedBy ? apiKeyOf(replacedBy) : null;
    },
  },
};
