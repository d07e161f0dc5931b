import {
  GraphQLError,
  Kind,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type NamedTypeNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * The root fields of a document as the gateway sees them: the first-response paths of an
 * unauthenticated request, the paths of errors raised outside a field, the gateway timeout's paths,
 * the scopes a request needs and the depth limit's root fields all see the same fields, through named
 * and inline fragments.
 */

export function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  return new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((fragment) => [fragment.name.value, fragment]),
  );
}

/**
 * What execution would run of a selection set: whether a selection's `@skip`/`@include` let it in, and
 * whether a fragment's type condition applies. Without one, every selection counts.
 */
export interface SelectionRules {
  included(selection: SelectionNode): boolean;
  applies(typeCondition: NamedTypeNode | undefined): boolean;
}

/**
 * The fields of a selection set with fragments expanded, as graphql-js `collectFields` collects them:
 * each named fragment is expanded once per selection set, however often it is spread. So a document
 * whose fragments spread each other twice over, level upon level, costs one pass (this runs before
 * authentication, on a document that is never validated), and a fragment cycle ends. Unlike
 * `collectFields` it needs no schema: type conditions and `@skip`/`@include` are evaluated only when
 * `rules` are given.
 */
export function fieldsOf(selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, rules?: SelectionRules): FieldNode[] {
  const fields: FieldNode[] = [];
  const expandedFragments = new Set<string>();
  const collect = (from: SelectionSetNode) => {
    for (const selection of from.selections) {
      if (rules && !rules.included(selection)) continue;
      if (selection.kind === Kind.FIELD) fields.push(selection);
      else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (!rules || rules.applies(selection.typeCondition)) collect(selection.selectionSet);
      } else if (!expandedFragments.has(selection.name.value)) {
        const fragment = fragments.get(selection.name.value);
        if (rules && !rules.applies(fragment?.typeCondition)) continue;
        expandedFragments.add(selection.name.value);
        if (fragment) collect(fragment.selectionSet);
      }
    }
  };
  collect(selectionSet);
  return fields;
}

/** A mistake in the request itself (contract section 7): a 400 whose error names it. */
export function badRequest(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
}

/** Why the document has no operation to run under this operation name. */
export function unresolvedOperation(operationName: string | null | undefined): GraphQLError {
  return operationName
    ? badRequest(`Unknown operation named "${operationName}".`)
    : badRequest('Must provide operation name if query contains multiple operations.');
}

/** The operation a request runs, chosen as GraphQL execution chooses it; BAD_REQUEST when there is none. */
export function selectedOperation(document: DocumentNode, operationName: string | undefined): OperationDefinitionNode {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const selected = operationName ? operations.find((operation) => operation.name?.value === operationName) : operations.length === 1 ? operations[0] : undefined;
  if (!selected) throw unresolvedOperation(operationName);
  return selected;
}

export interface RootField {
  /** The key in the response: the alias, else the field name. */
  key: string;
  name: string;
}

/** The operation's root fields, through fragments, in document order, one per response key. */
export function rootFieldsOf(document: DocumentNode, operation: OperationDefinitionNode, rules?: SelectionRules): RootField[] {
  const byKey = new Map<string, RootField>();
  for (const field of fieldsOf(operation.selectionSet, fragmentsOf(document), rules)) {
    const key = field.alias?.value ?? field.name.value;
    if (!byKey.has(key)) byKey.set(key, { key, name: field.name.value });
  }
  return [...byKey.values()];
}

/**
 * `@skip`/`@include` as execution would evaluate them, from the request's variables or their
 * defaults, before the document is validated and without the schema. A condition it cannot read (a
 * variable of no boolean value) lets the selection in, as do type conditions: it leaves out only what
 * surely does not run.
 */
export function surelySkippedOut(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): SelectionRules {
  const values: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    if (variables && Object.hasOwn(variables, name)) values[name] = variables[name];
    else if (definition.defaultValue) values[name] = valueFromASTUntyped(definition.defaultValue);
  }
  const condition = (selection: SelectionNode, directive: 'skip' | 'include') => {
    const argument = selection.directives?.find((node) => node.name.value === directive)?.arguments?.find((node) => node.name.value === 'if');
    return argument ? valueFromASTUntyped(argument.value, values) : undefined;
  };
  return { included: (selection) => condition(selection, 'skip') !== true && condition(selection, 'include') !== false, applies: () => true };
}
