import { parse, type OperationDefinitionNode } from 'graphql';
import { operationNameOf, type GraphqlBody } from './graphql-body.ts';
import { rootFieldsOf, selectedOperation } from './root-fields.ts';

export const AUTHENTICATION_REQUIRED = 'Authentication required';

function parsedRootKeys(query: string, operationName: string | undefined, maxTokens?: number): { keys: string[]; operation: OperationDefinitionNode } {
  const document = parse(query, maxTokens === undefined ? undefined : { maxTokens });
  const operation = selectedOperation(document, operationName);
  return { keys: rootFieldsOf(document, operation).map(({ key }) => key), operation };
}

/** The response keys of the selected operation's root fields; none when the document does not parse. */
function rootResponseKeysOf(query: string, operationName: string | undefined): string[] {
  try {
    return parsedRootKeys(query, operationName).keys;
  } catch {
    return [];
  }
}

/**
 * The body of an answer no field ran for: one error per root field of the request's operation, by
 * its response key, or one without a path when the document names none (it does not parse).
 */
export function rootFieldErrorsBody(body: GraphqlBody | undefined, message: string, code: string) {
  const keys = typeof body?.query === 'string' ? rootResponseKeysOf(body.query, operationNameOf(body)) : [];
  return {
    data: null,
    errors: (keys.length > 0 ? keys : [undefined]).map((key) => ({ message, ...(key ? { path: [key] } : {}), extensions: { code } })),
  };
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
