import { readFileSync } from 'node:fs';
import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import {
  forbiddenError,
  missingScope,
  nestedFieldScopes,
  rootFieldScopes,
  satisfies,
  scopeSet,
  type NestedFieldScopes,
  type ScopeRequirement,
} from '@ots/shared/scopes';

export { rootFieldScopes } from '@ots/shared/scopes';
import type { GatewayContext } from './data-source.ts';
import { fieldsOf, fragmentsOf, rootFieldsOf } from './root-fields.ts';

/**
 * Contract section 5, "Scopes and allowed addresses": each root field declares the scope it needs
 * with `@requiresScopes` in its subgraph's SDL, and the supergraph carries it. The gateway reads the
 * declarations once into a map (`Mutation.submitOrder` → `[["orders:write"]]`), so the check of a
 * request is a look-up per root field. A few fields below the root declare `read` too (a strategy's
 * orders and positions, reachable from a mutation's payload); the document is walked for them only
 * when the key lacks a scope one of them needs, which a key with every scope never does.
 */

/** What the gateway checks a request's fields against, read from the supergraph once. */
export interface ScopeRules {
  /** Root fields: `Mutation.submitOrder` → `[["orders:write"]]`. */
  required: ReadonlyMap<string, ScopeRequirement>;
  /** Fields below the root that declare a requirement, and each field's type, to walk down to them. */
  nested: NestedFieldScopes;
}

export function scopeRules(supergraphSdl: string): ScopeRules {
  return { required: rootFieldScopes(supergraphSdl).required, nested: nestedFieldScopes(supergraphSdl) };
}

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

type Refusal = ReturnType<typeof forbiddenError>;

/**
 * The refusals of an operation: one per root field the key's scopes do not reach, and one per root
 * field it may select that selects below it a field of another scope (the first such, by its path of
 * response keys); empty when it may run.
 */
export function refusedFields(rules: ScopeRules, document: DocumentNode, operation: OperationDefinitionNode, scopes: ReadonlySet<string>): Refusal[] {
  const refusals: Refusal[] = [];
  let allowed = false;
  for (const { key, requirement } of operationRequirements(rules.required, document, operation)) {
    const missing = missingScope(scopes, requirement);
    if (missing !== undefined) refusals.push(forbiddenError(key, missing));
    else allowed = true;
  }
  if (!allowed || !lacksNestedScope(rules.nested, scopes)) return refusals;
  const rootType = operation.operation === 'mutation' ? 'Mutation' : operation.operation === 'subscription' ? 'Subscription' : 'Query';
  const fragments = fragmentsOf(document);
  const below = new NestedWalk(rules.nested, fragments, scopes);
  for (const field of fieldsOf(operation.selectionSet, fragments)) {
    const key = field.alias?.value ?? field.name.value;
    // A root field refused already (its own scope, or one below an earlier selection of the same key).
    if (refusals.some((refusal) => refusal.path[0] === key) || !field.selectionSet) continue;
    const returned = rules.nested.returns.get(`${rootType}.${field.name.value}`);
    const found = returned && below.firstRefused(field.selectionSet, returned);
    if (found) refusals.push(forbiddenError([key, ...found.path], found.scope));
  }
  return refusals;
}

/** Whether the key lacks a scope that a field below the root needs: only then is the document walked. */
function lacksNestedScope(nested: NestedFieldScopes, scopes: ReadonlySet<string>): boolean {
  for (const requirement of nested.required.values()) if (!satisfies(scopes, requirement)) return true;
  return false;
}

interface NestedRefusal {
  /** Response keys from the selection set walked down to the refused field. */
  path: string[];
  scope: string;
}

/**
 * Finds, down the fields' types, the first field below the root whose requirement the key misses. A
 * named fragment is walked once, however often it is spread (its type condition fixes its type, so
 * what it refuses does not depend on where): a document whose fragments spread each other twice
 * over, level upon level, costs one walk of each. A fragment spread inside itself (invalid, and
 * refused by validation) refuses nothing the second time.
 */
class NestedWalk {
  private readonly ofFragment = new Map<string, NestedRefusal | undefined>();

  constructor(
    private readonly nested: NestedFieldScopes,
    private readonly fragments: Map<string, FragmentDefinitionNode>,
    private readonly scopes: ReadonlySet<string>,
  ) {}

  firstRefused(selectionSet: SelectionSetNode, type: string): NestedRefusal | undefined {
    for (const selection of selectionSet.selections) {
      let found: NestedRefusal | undefined;
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value;
        const field = `${type}.${selection.name.value}`;
        const requirement = this.nested.required.get(field);
        const missing = requirement && missingScope(this.scopes, requirement);
        const returned = this.nested.returns.get(field);
        if (missing !== undefined) return { path: [key], scope: missing };
        const below = selection.selectionSet && returned ? this.firstRefused(selection.selectionSet, returned) : undefined;
        if (below) found = { path: [key, ...below.path], scope: below.scope };
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        found = this.firstRefused(selection.selectionSet, selection.typeCondition?.name.value ?? type);
      } else {
        found = this.ofSpread(selection.name.value);
      }
      if (found) return found;
    }
    return undefined;
  }

  private ofSpread(name: string): NestedRefusal | undefined {
    if (!this.ofFragment.has(name)) {
      this.ofFragment.set(name, undefined);
      const fragment = this.fragments.get(name);
      if (fragment) this.ofFragment.set(name, this.firstRefused(fragment.selectionSet, fragment.typeCondition.name.value));
    }
    return this.ofFragment.get(name);
  }
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
 * Refuses, before anything runs, an operation that selects a field outside the key's scopes:
 * HTTP 200, `data: null`, one FORBIDDEN error per refused field (contract section 5).
 */
export function scopeCheckPlugin(rules: ScopeRules): ApolloServerPlugin<GatewayContext> {
  const listener = {
    async responseForOperation({ document, operation, contextValue }: { document: DocumentNode; operation: OperationDefinitionNode; contextValue: GatewayContext }) {
      const refusals = refusedFields(rules, document, operation, scopeSet(contextValue.caller.scopes));
      if (refusals.length === 0) return null;
      return { http: { status: 200, headers: new HeaderMap() }, body: { kind: 'single' as const, singleResult: { data: null, errors: refusals } } };
    },
  };
  return { requestDidStart: async () => listener };
}
