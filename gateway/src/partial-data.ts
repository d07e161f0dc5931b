import { createHash } from 'node:crypto';
import type { ApolloGateway } from '@apollo/gateway';
import { Kind, print, type SelectionNode } from 'graphql';
import type { GatewayContext } from './data-source.ts';

type Executor = ApolloGateway['executor'];
type GatewayLike = Pick<ApolloGateway, 'load' | 'onSchemaLoadOrUpdate' | 'stop'>;

const responseKey = (selection: SelectionNode & { kind: Kind.FIELD }) => selection.alias?.value ?? selection.name.value;

/**
 * Contract section 7: a subgraph that did not answer never costs the others' data. GraphQL nulls the
 * parent of a non-null field that failed, so a query whose non-null root field (`listStrategies`)
 * belongs to a subgraph that timed out or is down would lose every root field, `viewer` included.
 * Such a query is run again without the root fields of the subgraphs that failed (which are not
 * called again: data-source.ts), and those fields are null beside the others' data, each named by
 * its SERVICE_UNAVAILABLE error (error-paths.ts). Mutations are never run twice.
 */
function keepingOtherSubgraphsData(execute: Executor, owners: ReadonlyMap<string, string>): Executor {
  return async (requestContext) => {
    const result = await execute(requestContext);
    const { operation, document } = requestContext;
    const unavailable = (requestContext.context as Partial<GatewayContext>).unavailableServices;
    if (result.data != null || operation.operation !== 'query' || !unavailable?.size) return result;
    const lost = (selection: SelectionNode) => selection.kind === Kind.FIELD && unavailable.has(owners.get(`Query.${selection.name.value}`) ?? '');
    const kept = operation.selectionSet.selections.filter((selection) => !lost(selection));
    if (kept.length === operation.selectionSet.selections.length || kept.length === 0) return result;

    const reducedOperation = { ...operation, selectionSet: { ...operation.selectionSet, selections: kept } };
    const reducedDocument = { ...document, definitions: document.definitions.map((d) => (d === operation ? reducedOperation : d)) };
    const source = print(reducedDocument);
    const retried = await execute({
      ...requestContext,
      document: reducedDocument,
      operation: reducedOperation,
      source,
      queryHash: createHash('sha256').update(source).digest('hex'),
    });
    if (retried.data == null) return result;

    const data: Record<string, unknown> = {};
    for (const selection of operation.selectionSet.selections) {
      if (selection.kind !== Kind.FIELD) continue;
      const key = responseKey(selection);
      if (!(key in data)) data[key] = lost(selection) ? null : retried.data[key];
    }
    for (const [key, value] of Object.entries(retried.data)) if (!(key in data)) data[key] = value;
    const outageErrors = (result.errors ?? []).filter((error) => error.extensions?.code === 'SERVICE_UNAVAILABLE');
    return { ...retried, data, errors: [...outageErrors, ...(retried.errors ?? [])] };
  };
}

/** The gateway, its executor keeping the other subgraphs' data when one does not answer. */
export function keepOtherSubgraphsData(gateway: ApolloGateway, owners: ReadonlyMap<string, string>): GatewayLike {
  return {
    load: async (options) => {
      const loaded = await gateway.load(options);
      return { ...loaded, executor: loaded.executor && keepingOtherSubgraphsData(loaded.executor, owners) };
    },
    onSchemaLoadOrUpdate: (callback) => gateway.onSchemaLoadOrUpdate(callback),
    stop: () => gateway.stop(),
  };
}
