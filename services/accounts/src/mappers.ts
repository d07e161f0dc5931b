import { isApiKeyScope, scopeEnumValue } from '@ots/shared/scopes';
import type { ApiKeyRow } from './repository.ts';

// The parents of the schema's types (codegen.ts's `mappers`): kept apart from resolvers.ts, which
// imports the generated types that import these.

/** A Viewer carries nothing: its account and key are the caller's, read from the context. */
export type ViewerParent = Record<PropertyKey, never>;

/** The key as the API shows it, with the id of its successor for `replacedByApiKey`. */
export function apiKeyOf(key: ApiKeyRow) {
  return {
    id: key.id,
    name: key.name,
    environment: key.environment,
    displayPrefix: key.display_prefix,
    createdAt: key.created_at,
    expiresAt: key.expires_at,
    lastUsedAt: key.last_used_at,
    revokedAt: key.revoked_at,
    scopes: key.scopes.filter(isApiKeyScope).map(scopeEnumValue),
    allowedCidrs: key.allowed_cidrs,
    replacedByKeyId: key.replaced_by_key_id,
  };
}

/** The parent of ApiKey's own resolvers. */
export type ApiKeyParent = ReturnType<typeof apiKeyOf>;
