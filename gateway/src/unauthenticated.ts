import { GraphQLError, Kind, parse, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';

export const AUTHENTICATION_REQUIRED = 'Authentication required';

function selectedOperation(document: DocumentNode, operationName: string | undefined): OperationDefinitionNode {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (operationName) {
    const named = operations.find((operation) => operation.name?.value === operationName);
    if (!named) throw new GraphQLError(`Unknown operation named "${operationName}".`, { extensions: { code: 'BAD_REQUEST' } });
    return named;
  }
  if (operations.length !== 1) {
    throw new GraphQLError('Must provide operation name if query contains multiple operations.', { extensions: { code: 'BAD_REQUEST' } });
  }
  return operations[0]!;
}

/** Response keys of the root fields, through fragments, in document order and without repeats. */
function rootResponseKeys(selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, seen = new Set<string>()): string[] {
  const keys: string[] = [];
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      keys.push(selection.alias?.value ?? selection.name.value);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      keys.push(...rootResponseKeys(selection.selectionSet, fragments, seen));
    } else {
      const fragment = fragments.get(selection.name.value);
      if (fragment && !seen.has(fragment.name.value)) {
        seen.add(fragment.name.value);
        keys.push(...rootResponseKeys(fragment.selectionSet, fragments, seen));
      }
    }
  }
  return [...new Set(keys)];
}

function parsedRootKeys(query: string, operationName: string | undefined, maxTokens?: number): { keys: string[]; operation: OperationDefinitionNode } {
  const document = parse(query, maxTokens === undefined ? undefined : { maxTokens });
  const operation = selectedOperation(document, operationName);
  const fragments = new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((fragment) => [fragment.name.value, fragment]),
  );
  return { keys: rootResponseKeys(operation.selectionSet, fragments), operation };
}

/** The response keys of the selected operation's root fields; none when the document does not parse. */
export function rootResponseKeysOf(query: string, operationName: string | undefined): string[] {
  try {
    return parsedRootKeys(query, operationName).keys;
  } catch {
    return [];
  }
}

/**
 * Variant A of contract section 5: the document is parsed but not validated against the schema, so an
 * unauthenticated client learns nothing of it. A syntax error is thrown as the usual GraphQL error.
 * A document whose root selects nothing resolvable (a spread of a missing fragment) still gets one
 * error, named after the operation.
 */
export function variantABody(query: string, operationName: string | undefined, maxTokens: number) {
  const { keys, operation } = parsedRootKeys(query, operationName, maxTokens);
  const paths = keys.length > 0 ? keys : [operation.name?.value ?? operation.operation];
  return {
    data: null,
    errors: paths.map((key) => ({
      message: AUTHENTICATION_REQUIRED,
      path: [key],
      extensions: { code: 'UNAUTHENTICATED' },
    })),
  };
}
