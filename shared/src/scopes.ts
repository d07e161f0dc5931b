/**
 * What an API key may do (contract section 5, "Scopes and allowed addresses"): each root field of
 * the API needs one scope, declared with `@requiresScopes` in its subgraph's SDL; `viewer` needs
 * none. The gateway checks them before anything runs, and each subgraph again from the assertion.
 */
export const API_KEY_SCOPES = ['read', 'orders:write', 'fills:write', 'strategies:write', 'webhooks:write'] as const;

export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

const KNOWN: ReadonlySet<string> = new Set(API_KEY_SCOPES);

export function isApiKeyScope(text: string): text is ApiKeyScope {
  return KNOWN.has(text);
}

/** The GraphQL enum `ApiKeyScope` spells each scope in capitals: `orders:write` is `ORDERS_WRITE`. */
export function scopeEnumValue(scope: ApiKeyScope): string {
  return scope.toUpperCase().replace(':', '_');
}

/**
 * What a root field needs, as `@requiresScopes(scopes: [[...], ...])` says it: any one of the inner
 * lists, each of whose scopes the key must hold; an empty outer list (`viewer`) needs nothing.
 */
export type ScopeRequirement = readonly (readonly string[])[];

/** True when a key holding `scopes` satisfies the requirement. */
export function satisfies(scopes: ReadonlySet<string>, requirement: ScopeRequirement): boolean {
  return requirement.length === 0 || requirement.some((all) => all.every((scope) => scopes.has(scope)));
}

/** The scope a refusal names: the first alternative's first scope the key lacks. */
export function missingScope(scopes: ReadonlySet<string>, requirement: ScopeRequirement): string | undefined {
  if (satisfies(scopes, requirement)) return undefined;
  return requirement[0]?.find((scope) => !scopes.has(scope));
}

/** The contract's answer to a root field outside the key's scopes; the message names what is missing and nothing else. */
export function forbiddenError(responseKey: string, requiredScope: string) {
  return {
    message: `This API key lacks the scope ${requiredScope}`,
    path: [responseKey],
    extensions: { code: 'FORBIDDEN', requiredScope },
  };
}
