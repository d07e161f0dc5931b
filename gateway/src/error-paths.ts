import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, parse, type ConstDirectiveNode, type OperationDefinitionNode } from 'graphql';
import { rootFieldsOf } from './root-fields.ts';

/** Which subgraph resolves each root field (`Query.viewer` → `accounts`), read from the supergraph. */
export function rootFieldOwners(supergraphSdl: string): Map<string, string> {
  const document = parse(supergraphSdl);
  const graphNames = new Map<string, string>();
  const owners = new Map<string, string>();
  const argument = (directive: ConstDirectiveNode, name: string) => directive.arguments?.find((arg) => arg.name.value === name)?.value;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.ENUM_TYPE_DEFINITION && definition.name.value === 'join__Graph') {
      for (const value of definition.values ?? []) {
        const name = value.directives?.find((d) => d.name.value === 'join__graph');
        const text = name && argument(name, 'name');
        if (text?.kind === Kind.STRING) graphNames.set(value.name.value, text.value);
      }
    }
  }
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OBJECT_TYPE_DEFINITION || !['Query', 'Mutation'].includes(definition.name.value)) continue;
    for (const field of definition.fields ?? []) {
      const join = field.directives?.find((d) => d.name.value === 'join__field');
      const graph = join && argument(join, 'graph');
      if (graph?.kind === Kind.ENUM) owners.set(`${definition.name.value}.${field.name.value}`, graphNames.get(graph.value) ?? graph.value);
    }
  }
  return owners;
}

/**
 * Contract section 2: a top-level error names the operation in `path`. Errors raised before or
 * outside a field have no path of their own: a subgraph that did not answer names the root fields it
 * owns; a request refused as a whole (a limit, a bad value) names its first root field. The seed's
 * response shape is kept too: a top-level failure carries `data: null` beside its errors.
 */
export function errorPathsPlugin(owners: ReadonlyMap<string, string>): ApolloServerPlugin<{ unavailableServices?: Set<string> }> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, operation, document, request, contextValue }) {
          if (response.body.kind !== 'single') return;
          const result = response.body.singleResult;
          if (result.errors && result.data === undefined) result.data = null;
          if (!result.errors?.some((error) => !error.path)) return;
          if (!document) return;
          // Without a usable operation name (the error may be about just that), the first candidate is named.
          const selected =
            operation ??
            document.definitions.find(
              (d): d is OperationDefinitionNode =>
                d.kind === Kind.OPERATION_DEFINITION && (!request.operationName || d.name?.value === request.operationName),
            );
          if (!selected) return;
          const rootType = selected.operation === 'mutation' ? 'Mutation' : 'Query';
          const rootFields = rootFieldsOf(document, selected);
          if (rootFields.length === 0) return;
          const data = result.data as Record<string, unknown> | null | undefined;
          const unavailable = contextValue.unavailableServices ?? new Set<string>();
          // A root field the client skipped (`@skip`, `@include`) is not in `data` and lost nothing.
          const lostToOutage = rootFields
            .filter(({ key, name }) => unavailable.has(owners.get(`${rootType}.${name}`) ?? '') && (data ? data[key] === null : true))
            .map(({ key }) => key);
          // A nested field of the service that failed (e.g. a strategy's orderSubmissions) nulls the root
          // field above it; the error names that root field.
          const nullRoots = data ? rootFields.filter(({ key }) => data[key] === null).map(({ key }) => key) : [];
          const outageTargets = lostToOutage.length > 0 ? lostToOutage : nullRoots;
          result.errors = result.errors.flatMap((error) => {
            if (error.path) return [error];
            const outage = error.extensions?.code === 'SERVICE_UNAVAILABLE' && outageTargets.length > 0;
            return (outage ? outageTargets : [rootFields[0]!.key]).map((key) => ({ ...error, path: [key] }));
          });
        },
      };
    },
  };
}
