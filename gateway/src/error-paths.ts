import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, type OperationDefinitionNode } from 'graphql';

/**
 * Contract section 2: a top-level error names the operation in `path`. Errors raised before or
 * outside a field (a limit, a refused scalar, a subgraph that did not answer) have no path of their
 * own; they get the response key of each root field they left without data, or of the first root
 * field when the request was refused as a whole.
 */
export function errorPathsPlugin<Context extends object>(): ApolloServerPlugin<Context> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, operation, document, request }) {
          if (response.body.kind !== 'single') return;
          const result = response.body.singleResult;
          // The seed's response shape: a top-level failure carries `data: null` beside its errors.
          if (result.errors && result.data === undefined) result.data = null;
          if (!result.errors?.some((error) => !error.path)) return;
          const selected =
            operation ??
            (document?.definitions.find(
              (d): d is OperationDefinitionNode =>
                d.kind === Kind.OPERATION_DEFINITION && (!request.operationName || d.name?.value === request.operationName),
            ) as OperationDefinitionNode | undefined);
          const rootKeys = (selected?.selectionSet.selections ?? []).flatMap((selection) =>
            selection.kind === Kind.FIELD ? [selection.alias?.value ?? selection.name.value] : [],
          );
          if (rootKeys.length === 0) return;
          const data = result.data as Record<string, unknown> | null | undefined;
          // A request refused as a whole (a limit, a bad value) names the operation by its first root
          // field; an execution that lost some fields names each of them.
          const missing = data ? rootKeys.filter((key) => data[key] === null || data[key] === undefined) : [];
          const targets = missing.length > 0 ? missing : [rootKeys[0]!];
          result.errors = result.errors.flatMap((error) => (error.path ? [error] : targets.map((key) => ({ ...error, path: [key] }))));
        },
      };
    },
  };
}
