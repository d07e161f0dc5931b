import { createHash } from 'node:crypto';
import type { ApolloGateway } from '@apollo/gateway';
import { getDirectiveValues, getVariableValues, GraphQLIncludeDirective, GraphQLSkipDirective, isAbstractType, print, type FieldNode } from 'graphql';
import type { GatewayContext } from './data-source.ts';
import { fieldsOf, fragmentsOf } from './root-fields.ts';

type Executor = ApolloGateway['executor'];
type Answer = Awaited<ReturnType<Executor>>;
type GatewayLike = Pick<ApolloGateway, 'load' | 'onSchemaLoadOrUpdate' | 'stop'>;

const responseKey = (field: FieldNode) => field.alias?.value ?? field.name.value;

/** The executor's run of the operation with only `fields` at its root. */
function runWith(execute: Executor, requestContext: Parameters<Executor>[0], fields: FieldNode[]) {
  const { operation, document } = requestContext;
  const reducedOperation = { ...operation, selectionSet: { ...operation.selectionSet, selections: fields } };
  const reducedDocument = { ...document, definitions: document.definitions.map((d) => (d === operation ? reducedOperation : d)) };
  const source = print(reducedDocument);
  return execute({ ...requestContext, document: reducedDocument, operation: reducedOperation, source, queryHash: createHash('sha256').update(source).digest('hex') });
}

/** The root fields by response key, in document order: selections of one key are merged into one field, and run together. */
function byResponseKey(fields: FieldNode[]): FieldNode[][] {
  const byKey = new Map<string, FieldNode[]>();
  for (const field of fields) byKey.set(responseKey(field), [...(byKey.get(responseKey(field)) ?? []), field]);
  return [...byKey.values()];
}

/** The answers of runs of parts of one operation as one answer: a part that ran nothing has its root fields null. */
function merged(rootFields: FieldNode[], answers: Answer[], outageErrors: NonNullable<Answer['errors']>): Answer | undefined {
  const served = answers.filter((answer) => answer.data != null);
  if (served.length === 0) return undefined;
  const data: Record<string, unknown> = {};
  for (const field of rootFields) data[responseKey(field)] ??= null;
  for (const answer of served) Object.assign(data, answer.data);
  const errors = [...outageErrors, ...served.flatMap((answer) => answer.errors ?? [])];
  // GraphQL: `errors`, when present, is not empty.
  const { errors: _ignored, ...first } = served[0]!;
  return errors.length > 0 ? { ...first, data, errors } : { ...first, data };
}

/**
 * The operation's root fields as execution runs them: `@skip`/`@include` evaluated with the request's
 * variables and fragments of another type left out, so that a part run on its own runs nothing the
 * client left out. Undefined when the variables are not valid (the whole operation is then run, and
 * answers why).
 */
function rootFieldsAsExecuted({ schema, operation, document, request }: Parameters<Executor>[0]): FieldNode[] | undefined {
  const variables = getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {});
  const rootType = schema.getRootType(operation.operation);
  if (variables.errors || !rootType) return undefined;
  const { coerced } = variables;
  return fieldsOf(operation.selectionSet, fragmentsOf(document), {
    included: (selection) =>
      getDirectiveValues(GraphQLSkipDirective, selection, coerced)?.if !== true && getDirectiveValues(GraphQLIncludeDirective, selection, coerced)?.if !== false,
    applies: (typeCondition) => {
      if (!typeCondition) return true;
      const type = schema.getType(typeCondition.name.value);
      return type === rootType || (isAbstractType(type) && schema.isSubType(type, rootType));
    },
  });
}

/**
 * Contract section 7: a subgraph that did not answer never costs the others' data. GraphQL nulls the
 * parent of a non-null field that failed, so a query whose non-null root field (`listStrategies`)
 * belongs to a subgraph that timed out or is down would lose every root field, `viewer` included, and
 * so would one whose root field holds a non-null field of that subgraph's below it. Such a query is
 * run again without the root fields it lost (the failed subgraphs are not called again:
 * data-source.ts), and those fields are null beside the others' data, each named by its
 * SERVICE_UNAVAILABLE error (error-paths.ts). Mutations are never run twice: see `mutationByOwner`.
 */
function keepingOtherSubgraphsData(execute: Executor, owners: ReadonlyMap<string, string>): Executor {
  return async (requestContext) => {
    const { operation } = requestContext;
    if (operation.operation === 'mutation') return mutationByOwner(execute, owners, requestContext);
    const result = await execute(requestContext);
    const unavailable = (requestContext.context as Partial<GatewayContext>).unavailableServices;
    if (result.data != null || operation.operation !== 'query' || !unavailable?.size) return result;
    // The root fields as executed, through fragments at the root, each a field of its own.
    const rootFields = rootFieldsAsExecuted(requestContext);
    if (!rootFields) return result;
    const owned = (field: FieldNode) => unavailable.has(owners.get(`Query.${field.name.value}`) ?? '');
    const candidates = rootFields.filter((field) => !owned(field));
    if (candidates.length === 0) return result;

    // Without the failed subgraphs' own root fields; and when that is still all null (a non-null
    // field of theirs below another root field: a strategy's orderSubmissions), each root field on
    // its own, the failed subgraphs not called again (data-source.ts).
    let answers = candidates.length < rootFields.length ? [await runWith(execute, requestContext, candidates)] : [];
    if (answers.length === 0 || answers[0]!.data == null) {
      answers = await Promise.all(byResponseKey(candidates).map((fields) => runWith(execute, requestContext, fields)));
    }
    const outageErrors = (result.errors ?? []).filter((error) => error.extensions?.code === 'SERVICE_UNAVAILABLE');
    return merged(rootFields, answers, outageErrors) ?? result;
  };
}

/**
 * A mutation whose root fields belong to more than one subgraph runs as one run per subgraph's turn,
 * in document order, one after another as GraphQL runs a mutation's root fields: the payloads are
 * non-null, so in one run an order that committed would be nulled, with the whole `data`, by another
 * subgraph's outage, and a client could place it again. A mutation is never run twice, so this is
 * decided before it runs, not after it failed. A mutation of one subgraph (every SDK call) runs as is.
 */
async function mutationByOwner(execute: Executor, owners: ReadonlyMap<string, string>, requestContext: Parameters<Executor>[0]) {
  // Most mutations name one subgraph's fields only, skipped or not: they run as they are, without the
  // variables coerced a second time to find out which would run.
  const ownerOf = (field: FieldNode) => owners.get(`Mutation.${field.name.value}`) ?? '';
  const named = fieldsOf(requestContext.operation.selectionSet, fragmentsOf(requestContext.document));
  if (named.every((field) => ownerOf(field) === ownerOf(named[0]!))) return execute(requestContext);
  const rootFields = rootFieldsAsExecuted(requestContext);
  if (!rootFields) return execute(requestContext);
  const turns: { owner: string; fields: FieldNode[] }[] = [];
  for (const fields of byResponseKey(rootFields)) {
    const owner = ownerOf(fields[0]!);
    const last = turns.at(-1);
    if (last?.owner === owner) last.fields.push(...fields);
    else turns.push({ owner, fields });
  }
  if (turns.length < 2) return execute(requestContext);
  const answers: Answer[] = [];
  for (const turn of turns) answers.push(await runWith(execute, requestContext, turn.fields));
  const failures = answers.filter((answer) => answer.data == null).flatMap((answer) => answer.errors ?? []);
  return merged(rootFields, answers, failures) ?? { data: null, errors: failures };
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
