import { DateTimeScalar } from '@ots/shared/scalars';
import type { Resolvers } from './generated/resolvers-types.ts';
import { scopeEnumValue, isApiKeyScope } from '@ots/shared/scopes';
import type { ApiKey, ApiKeyScope } from './generated/resolvers-types.ts';
import { findAccount, findApiKeyOfAccount, findReplacedApiKey, type ApiKeyRow } from './repository.ts';

/** A Viewer carries nothing: its account and key are the caller's, read from the context. */
export type ViewerParent = Record<PropertyKey, never>;

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

/** The key as the API shows it, with the id of its successor for `replacedByApiKey`. */
export type ApiKeyParent = Omit<ApiKey, 'replacesApiKey' | 'replacedByApiKey'> & { replacedByKeyId: string | null };

function apiKeyOf(key: ApiKeyRow): ApiKeyParent {
  return {
    id: key.id,
    name: key.name,
    environment: key.environment,
    displayPrefix: key.display_prefix,
    createdAt: key.created_at,
    expiresAt: key.expires_at,
    lastUsedAt: key.last_used_at,
    revokedAt: key.revoked_at,
    scopes: key.scopes.filter(isApiKeyScope).map((scope) => scopeEnumValue(scope) as ApiKeyScope),
    allowedCidrs: key.allowed_cidrs,
    replacedByKeyId: key.replaced_by_key_id,
  };
}
