import { Kind, parse, type ConstValueNode, type DocumentNode, type FieldDefinitionNode, type TypeNode } from 'graphql';

/**
 * What an API key may do (contract section 5, "Scopes and allowed addresses"): each root field of
 * the API needs one scope, declared with `@requiresScopes` in its subgraph's SDL; `viewer` needs
 * none. A field below the root that lists what the key did not write or ask for (a strategy's
 * orders and positions) declares `read` the same way, so that a mutation's payload is no way round
 * it. The gateway checks them before anything runs, and each subgraph again from the assertion.
 */
export const API_KEY_SCOPES = ['read', 'orders:write', 'fills:write', 'strategies:write', 'webhooks:write'] as const;

export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

const KNOWN: ReadonlySet<string> = new Set(API_KEY_SCOPES);

export function isApiKeyScope(text: string): text is ApiKeyScope {
  return KNOWN.has(text);
}

type EnumSpelling<Scope extends string> = Uppercase<Scope extends `${infer Resource}:${infer Action}` ? `${Resource}_${Action}` : Scope>;

/** A scope as the GraphQL enum `ApiKeyScope` spells it. */
export type ScopeEnumValue = EnumSpelling<ApiKeyScope>;

/** The GraphQL enum `ApiKeyScope` spells each scope in capitals: `orders:write` is `ORDERS_WRITE`. */
export function scopeEnumValue(scope: ApiKeyScope): ScopeEnumValue {
  return scope.toUpperCase().replace(':', '_') as ScopeEnumValue;
}

/**
 * What a root field needs, as `@requiresScopes(scopes: [[...], ...])` says it: any one of the inner
 * lists, each of whose scopes the key must hold; an empty outer list (`viewer`) needs nothing.
 */
export type ScopeRequirement = readonly (readonly string[])[];

export function satisfies(scopes: ReadonlySet<string>, requirement: ScopeRequirement): boolean {
  return requirement.length === 0 || requirement.some((all) => all.every((scope) => scopes.has(scope)));
}

/** The scope a refusal names: the first alternative's first scope the key lacks. */
export function missingScope(scopes: ReadonlySet<string>, requirement: ScopeRequirement): string | undefined {
  if (satisfies(scopes, requirement)) return undefined;
  return requirement[0]?.find((scope) => !scopes.has(scope));
}

const scopeSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** A key's scopes as a set, made once per scope list (a cached key record, a verified assertion) rather than per request. */
export function scopeSet(scopes: readonly string[]): ReadonlySet<string> {
  let set = scopeSets.get(scopes);
  if (!set) {
    set = new Set(scopes);
    scopeSets.set(scopes, set);
  }
  return set;
}

/**
 * The contract's answer to a field outside the key's scopes, at its path of response keys (a root
 * field's is its own key); the message names what is missing and nothing else.
 */
export function forbiddenError(path: string | readonly string[], requiredScope: string) {
  return {
    message: `This API key lacks the scope ${requiredScope}`,
    path: typeof path === 'string' ? [path] : [...path],
    extensions: { code: 'FORBIDDEN', requiredScope },
  };
}

const ROOT_TYPES = ['Query', 'Mutation', 'Subscription'];

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

function requirementOf(field: FieldDefinitionNode): ScopeRequirement | undefined {
  const directive = field.directives?.find((d) => d.name.value === 'requiresScopes');
  const scopes = directive?.arguments?.find((argument) => argument.name.value === 'scopes')?.value;
  return scopes && stringLists(scopes);
}

/** The type a field returns, without its lists and non-nulls. */
function namedTypeOf(type: TypeNode): string {
  return type.kind === Kind.NAMED_TYPE ? type.name.value : namedTypeOf(type.type);
}

export interface NestedFieldScopes {
  /** `Type.field` → what it needs, for the fields below the root that declare `@requiresScopes`. */
  required: Map<string, ScopeRequirement>;
  /** `Type.field` → the name of the type it returns, for every field of every object and interface type: how a walk of a document goes down. */
  returns: Map<string, string>;
}

/** Reads `@requiresScopes` of the fields of a supergraph (or a subgraph's SDL) below its root types. */
export function nestedFieldScopes(sdl: string | DocumentNode): NestedFieldScopes {
  const document = typeof sdl === 'string' ? parse(sdl) : sdl;
  const required = new Map<string, ScopeRequirement>();
  const returns = new Map<string, string>();
  for (const definition of document.definitions) {
    if (
      definition.kind !== Kind.OBJECT_TYPE_DEFINITION &&
      definition.kind !== Kind.OBJECT_TYPE_EXTENSION &&
      definition.kind !== Kind.INTERFACE_TYPE_DEFINITION &&
      definition.kind !== Kind.INTERFACE_TYPE_EXTENSION
    ) {
      continue;
    }
    for (const field of definition.fields ?? []) {
      const name = `${definition.name.value}.${field.name.value}`;
      returns.set(name, namedTypeOf(field.type));
      const requirement = ROOT_TYPES.includes(definition.name.value) ? undefined : requirementOf(field);
      if (requirement) required.set(name, requirement);
    }
  }
  return { required, returns };
}

/** Reads `@requiresScopes` of every root field of a supergraph (or a subgraph's SDL). */
export function rootFieldScopes(sdl: string | DocumentNode): RootFieldScopes {
  const document = typeof sdl === 'string' ? parse(sdl) : sdl;
  const required = new Map<string, ScopeRequirement>();
  const undeclared: string[] = [];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OBJECT_TYPE_DEFINITION && definition.kind !== Kind.OBJECT_TYPE_EXTENSION) continue;
    if (!ROOT_TYPES.includes(definition.name.value)) continue;
    for (const field of definition.fields ?? []) {
      const name = `${definition.name.value}.${field.name.value}`;
      // Federation's own root fields (`_entities`, `_service`) are the gateway's plumbing, never a client's.
      if (field.name.value.startsWith('_')) continue;
      const lists = requirementOf(field);
      if (lists) required.set(name, lists);
      else undeclared.push(name);
    }
  }
  return { required, undeclared };
}
