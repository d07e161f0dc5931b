import { readFileSync } from 'node:fs';
import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import type { DocumentNode, OperationDefinitionNode } from 'graphql';
import { forbiddenError, missingScope, rootFieldScopes, satisfies, scopeSet, type ScopeRequirement } from '@ots/shared/scopes';

export { rootFieldScopes } from '@ots/shared/scopes';
import type { GatewayContext } from './data-source.ts';
import { rootFieldsOf } from './root-fields.ts';

/**
 * Contract section 5, "Scopes and allowed addresses": each root field declares the scope it needs
 * with `@requiresScopes` in its subgraph's SDL, and the supergraph carries it. The gateway reads the
 * declarations once into a map (`Mutation.submitOrder` → `[["orders:write"]]`), so the check of a
 * request is a look-up per root field, not a walk of its document.
 */

type RootType = 'Query' | 'Mutation' | 'Subscription';

/** Root fields of introspection: a key may always learn the schema, as it may always ask `viewer`. */
const INTROSPECTION = new Set(['__schema', '__type', '__typename']);

/** An operation's root fields with what each needs; kept per parsed operation (Apollo reuses the parsed document of a repeated query). */
const requirementsOf = new WeakMap<OperationDefinitionNode, { key: string; requirement: ScopeRequirement }[]>();

/** A field the supergraph does not have fails validation first; one that declares nothing cannot be built (compose.ts). */
const UNDECLARED: ScopeRequirement = [['read']];

function operationRequirements(required: ReadonlyMap<string, ScopeRequirement>, document: DocumentNode, operation: OperationDefinitionNode) {
  let requirements = requirementsOf.get(operation);
  if (!requirements) {
    const type: RootType = operation.operation === 'mutation' ? 'Mutation' : operation.operation === 'subscription' ? 'Subscription' : 'Query';
    requirements = rootFieldsOf(document, operation)
      .filter(({ name }) => !INTROSPECTION.has(name))
      .map(({ key, name }) => ({ key, requirement: required.get(`${type}.${name}`) ?? UNDECLARED }));
    requirementsOf.set(operation, requirements);
  }
  return requirements;
}

/** The refusals of an operation, one per root field the key's scopes do not reach; empty when it may run. */
export function refusedRootFields(
  required: ReadonlyMap<string, ScopeRequirement>,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  scopes: ReadonlySet<string>,
): ReturnType<typeof forbiddenError>[] {
  const refusals: ReturnType<typeof forbiddenError>[] = [];
  for (const { key, requirement } of operationRequirements(required, document, operation)) {
    const missing = missingScope(scopes, requirement);
    if (missing !== undefined) refusals.push(forbiddenError(key, missing));
  }
  return refusals;
}

const REQUIRES_SCOPES_LINK = '@link(url: "https://specs.apollo.dev/requiresScopes/v0.1", for: SECURITY)';

/**
 * The supergraph as Apollo Gateway loads it. The `requiresScopes` feature is linked `for: SECURITY`
 * so that a router which cannot enforce it refuses to start; Apollo Gateway cannot, and so refuses
 * it. This gateway enforces it itself before execution (scopeCheckPlugin, started with the same
 * supergraph), so it hands Apollo the link without the purpose; only this link is changed.
 */
export function supergraphForExecution(supergraphSdl: string): string {
  return supergraphSdl.replace(REQUIRES_SCOPES_LINK, '@link(url: "https://specs.apollo.dev/requiresScopes/v0.1")');
}

/**
 * Whether a key holding `scopes` may select the root field `field` (`Subscription.events`) of the
 * supergraph, for ways in that skip the GraphQL plugin. A field that declares nothing is refused.
 * Without `required`, the built supergraph's declarations, read anew.
 */
export function keyAllows(
  scopes: readonly string[],
  field: string,
  required: ReadonlyMap<string, ScopeRequirement> = rootFieldScopes(readFileSync(new URL('../supergraph.graphql', import.meta.url), 'utf8')).required,
): boolean {
  const requirement = required.get(field);
  return requirement !== undefined && satisfies(scopeSet(scopes), requirement);
}

/**
 * Refuses, before anything runs, an operation that selects a root field outside the key's scopes:
 * HTTP 200, `data: null`, one FORBIDDEN error per refused root field (contract section 5).
 */
export function scopeCheckPlugin(required: ReadonlyMap<string, ScopeRequirement>): ApolloServerPlugin<GatewayContext> {
  const listener = {
    async responseForOperation({ document, operation, contextValue }: { document: DocumentNode; operation: OperationDefinitionNode; contextValue: GatewayContext }) {
      const refusals = refusedRootFields(required, document, operation, scopeSet(contextValue.caller.scopes));
      if (refusals.length === 0) return null;
      return { http: { status: 200, headers: new HeaderMap() }, body: { kind: 'single' as const, singleResult: { data: null, errors: refusals } } };
    },
  };
  return { requestDidStart: async () => listener };
}
