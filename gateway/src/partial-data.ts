import { createHash } from 'node:crypto';
import type { ApolloGateway } from '@apollo/gateway';
import { print, type FieldNode } from 'graphql';
import type { GatewayContext } from './data-source.ts';
import { fieldsOf, fragmentsOf } from './root-fields.ts';

type Executor = ApolloGateway['executor'];
type GatewayLike = Pick<ApolloGateway, 'load' | 'onSchemaLoadOrUpdate' | 'stop'>;

const responseKey = (field: FieldNode) => field.alias?.value ?? field.name.value;

/**
 * Contract section 7: a subgraph that did not answer never costs the others' data. GraphQL nulls the
 * parent of a non-null field that failed, so a query whose non-null root field (`listStrategies`)
 * belongs to a subgraph that timed out or is down would lose every root field, `viewer` included, and
 * so would one whose root field holds a non-null field of that subgraph's below it. Such a query is
 * run again without the root fields it lost (the failed subgraphs are not called again:
 * data-source.ts), and those fields are null beside the others' data, each named by its
 * SERVICE_UNAVAILABLE error (error-paths.ts). Mutations are never run twice.
 */
function keepingOtherSubgraphsData(execute: Executor, owners: ReadonlyMap<string, string>): Executor {
  return async (requestContext) => {
    const result = await execute(requestContext);
    const { operation, document } = requestContext;
    const unavailable = (requestContext.context as Partial<GatewayContext>).unavailableServices;
    if (result.data != null || operation.operation !== 'query' || !unavailable?.size) return result;
    // The root fields as executed, through fragments at the root, each a field of its own.
    const rootFields = fieldsOf(operation.selectionSet, fragmentsOf(document));
    const owned = (field: FieldNode) => unavailable.has(owners.get(`Query.${field.name.value}`) ?? '');
    const candidates = rootFields.filter((field) => !owned(field));
    if (candidates.length === 0) return result;

    const runWith = (fields: FieldNode[]) => {
      const reducedOperation = { ...operation, selectionSet: { ...operation.selectionSet, selections: fields } };
      const reducedDocument = { ...document, definitions: document.definitions.map((d) => (d === operation ? reducedOperation : d)) };
      const source = print(reducedDocument);
      return execute({ ...requestContext, document: reducedDocument, operation: reducedOperation, source, queryHash: createHash('sha256').update(source).digest('hex') });
    };
    // Without the failed subgraphs' own root fields; and when that is still all null (a non-null
    // field of theirs below another root field: a strategy's orderSubmissions), each root field on
    // its own, the failed subgraphs not called again (data-source.ts).
    let answers = candidates.length < rootFields.length ? [await runWith(candidates)] : [];
    if (answers.length === 0 || answers[0]!.data == null) {
      // By response key: selections of one key are merged into one field, and run together.
      const byKey = new Map<string, FieldNode[]>();
      for (const field of candidates) byKey.set(responseKey(field), [...(byKey.get(responseKey(field)) ?? []), field]);
      answers = await Promise.all([...byKey.values()].map(runWith));
    }
    const served = answers.filter((answer) => answer.data != null);
    if (served.length === 0) return result;

    const data: Record<string, unknown> = {};
    for (const field of rootFields) data[responseKey(field)] ??= null;
    for (const answer of served) Object.assign(data, answer.data);
    const outageErrors = (result.errors ?? []).filter((error) => error.extensions?.code === 'SERVICE_UNAVAILABLE');
    return { ...served[0]!, data, errors: [...outageErrors, ...served.flatMap((answer) => answer.errors ?? [])] };
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
