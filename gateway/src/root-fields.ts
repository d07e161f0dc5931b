import {
  GraphQLError,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * The one walk over a document's selections that the gateway uses: the first-response paths of an
 * unauthenticated request, the paths of errors raised outside a field, the gateway timeout's paths
 * and the query limits all see the same fields, through named and inline fragments.
 */

export function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  return new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((fragment) => [fragment.name.value, fragment]),
  );
}

export interface ExpandedField {
  field: FieldNode;
  typeCondition?: string;
  /** The fragments expanded to reach this field; expanding one of them again below it would loop. */
  fragmentPath: ReadonlySet<string>;
}

/** Fields of a selection set with fragments expanded; a fragment already on the path is not expanded again. */
export function fieldsOf(
  selectionSet: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  fragmentPath: ReadonlySet<string> = new Set(),
): ExpandedField[] {
  const fields: ExpandedField[] = [];
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) fields.push({ field: selection, fragmentPath });
    else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const typeCondition = selection.typeCondition?.name.value;
      for (const entry of fieldsOf(selection.selectionSet, fragments, fragmentPath)) fields.push({ ...entry, typeCondition: entry.typeCondition ?? typeCondition });
    } else if (!fragmentPath.has(selection.name.value)) {
      const fragment = fragments.get(selection.name.value);
      if (fragment) {
        const inner = fieldsOf(fragment.selectionSet, fragments, new Set([...fragmentPath, fragment.name.value]));
        for (const entry of inner) fields.push({ ...entry, typeCondition: entry.typeCondition ?? fragment.typeCondition.name.value });
      }
    }
  }
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
export function rootFieldsOf(document: DocumentNode, operation: OperationDefinitionNode): RootField[] {
  const byKey = new Map<string, RootField>();
  for (const { field } of fieldsOf(operation.selectionSet, fragmentsOf(document))) {
    const key = field.alias?.value ?? field.name.value;
    if (!byKey.has(key)) byKey.set(key, { key, name: field.name.value });
  }
  return [...byKey.values()];
}
