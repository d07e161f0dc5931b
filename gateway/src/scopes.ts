import { Kind, parse, type ConstValueNode, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { forbiddenError, missingScope, satisfies, type ScopeRequirement } from '@ots/shared/scopes';
import { rootFieldsOf } from './root-fields.ts';

/**
 * Contract section 5, "Scopes and allowed addresses": each root field declares the scope it needs
 * with `@requiresScopes` in its subgraph's SDL, and the supergraph carries it. The gateway reads the
 * declarations once into a map (`Mutation.submitOrder` → `[["orders:write"]]`), so the check of a
 * request is a look-up per root field, not a walk of its document.
 */

const ROOT_TYPES = ['Query', 'Mutation', 'Subscription'] as const;
type RootType = (typeof ROOT_TYPES)[number];

/** Root fields of introspection: a key may always learn the schema, as it may always ask `viewer`. */
const INTROSPECTION = new Set(['__schema', '__type', '__typename']);

function stringLists(value: ConstValueNode): string[][] | undefined {
  if (value.kind !== Kind.LIST) return undefined;
  const lists: string[][] = [];
  for (const inner of value.values) {
    if (inner.kind !== Kind.LIST || inner.values.some((scope) => scope.kind !== Kind.STRING)) return undefined;
    lists.push(inner.values.map((scope) => (scope as { value: string }).value));
  }
  return lists;
}

export interface RootFieldScopes {
  /** `Type.field` → what it needs; a field absent here declared nothing. */
  required: Map<string, ScopeRequirement>;
  /** `Type.field` of every root field that declares no scope: the build refuses these. */
  undeclared: string[];
}

/** Reads `@requiresScopes` of every root field of a supergraph (or a subgraph's SDL). */
export function rootFieldScopes(sdl: string | DocumentNode): RootFieldScopes {
  const document = typeof sdl === 'string' ? parse(sdl) : sdl;
  const required = new Map<string, ScopeRequirement>();
  const undeclared: string[] = [];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OBJECT_TYPE_DEFINITION && definition.kind !== Kind.OBJECT_TYPE_EXTENSION) continue;
    if (!(ROOT_TYPES as readonly string[]).includes(definition.name.value)) continue;
    for (const field of definition.fields ?? []) {
      const name = `${definition.name.value}.${field.name.value}`;
      // Federation's own root fields (`_entities`, `_service`) are the gateway's plumbing, never a client's.
      if (field.name.value.startsWith('_')) continue;
      const directive = field.directives?.find((d) => d.name.value === 'requiresScopes');
      const scopes = directive?.arguments?.find((argument) => argument.name.value === 'scopes')?.value;
      const lists = scopes && stringLists(scopes);
      if (lists) required.set(name, lists);
      else undeclared.push(name);
    }
  }
  return { required, undeclared };
}

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

/**
 * For other ways in (the event streams): whether a key holding `scopes` may select the root field
 * `field` (`Subscription.events`). A field that declares nothing is refused.
 */
export function keyAllows(required: ReadonlyMap<string, ScopeRequirement>, scopes: ReadonlySet<string> | readonly string[], field: string): boolean {
  const requirement = required.get(field);
  return requirement !== undefined && satisfies(scopes instanceof Set ? scopes : new Set(scopes), requirement);
}
