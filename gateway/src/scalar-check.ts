import {
  GraphQLError,
  Kind,
  TypeInfo,
  getNamedType,
  getNullableType,
  isInputObjectType,
  isListType,
  isScalarType,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLScalarType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';
import { DateTimeScalar, DecimalScalar } from '@ots/shared/scalars';

/**
 * The gateway's schema knows custom scalars only by name, so it would forward any value to the
 * subgraphs. Checking `Decimal` and `DateTime` values here, before planning, gives every client the
 * same top-level BAD_USER_INPUT naming the argument, whether the value came inline or as a variable.
 */
const CHECKED: Record<string, GraphQLScalarType<unknown, unknown>> = {
  Decimal: DecimalScalar as GraphQLScalarType<unknown, unknown>,
  DateTime: DateTimeScalar as GraphQLScalarType<unknown, unknown>,
};

function refuse(where: string, error: unknown): never {
  const reason = error instanceof Error ? error.message : String(error);
  throw new GraphQLError(`Invalid value for ${where}: ${reason}`, {
    extensions: { code: 'BAD_USER_INPUT', argumentName: where, http: { status: 400 } },
  });
}

function checkValue(value: unknown, type: GraphQLInputType, where: string): void {
  if (value === null || value === undefined) return;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    const items = Array.isArray(value) ? value : [value];
    items.forEach((item, index) => checkValue(item, nullable.ofType, `${where}[${index}]`));
    return;
  }
  if (isInputObjectType(nullable)) {
    if (typeof value !== 'object') return;
    const fields = nullable.getFields();
    for (const [name, fieldValue] of Object.entries(value as Record<string, unknown>)) {
      const field = fields[name];
      if (field) checkValue(fieldValue, field.type, `${where}.${name}`);
    }
    return;
  }
  if (isScalarType(nullable)) {
    const scalar = CHECKED[nullable.name];
    if (scalar) {
      try {
        scalar.parseValue(value);
      } catch (error) {
        refuse(where, error);
      }
    }
  }
}

function checkLiteral(node: ValueNode, type: GraphQLInputType, where: string): void {
  if (node.kind === Kind.VARIABLE || node.kind === Kind.NULL) return;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    const items = node.kind === Kind.LIST ? node.values : [node];
    items.forEach((item, index) => checkLiteral(item, nullable.ofType, `${where}[${index}]`));
    return;
  }
  if (isInputObjectType(nullable)) {
    if (node.kind !== Kind.OBJECT) return;
    const fields = nullable.getFields();
    for (const fieldNode of node.fields) {
      const field = fields[fieldNode.name.value];
      if (field) checkLiteral(fieldNode.value, field.type, `${where}.${fieldNode.name.value}`);
    }
    return;
  }
  const scalar = isScalarType(nullable) ? CHECKED[nullable.name] : undefined;
  if (scalar) {
    try {
      scalar.parseLiteral(node, undefined);
    } catch (error) {
      refuse(where, error);
    }
  }
}

/** Whether a value of `type` can hold a checked scalar, at any depth (input types may refer to themselves). */
function mayHoldCheckedScalar(type: GraphQLInputType, seen = new Set<GraphQLInputType>()): boolean {
  const named = getNamedType(type);
  if (isScalarType(named)) return named.name in CHECKED;
  if (!isInputObjectType(named) || seen.has(named)) return false;
  seen.add(named);
  return Object.values(named.getFields()).some((field) => mayHoldCheckedScalar(field.type, seen));
}

/** The literals' verdict, which a document always gets (undefined: none refused). */
function checkLiterals(schema: GraphQLSchema, document: DocumentNode): GraphQLError | undefined {
  const typeInfo = new TypeInfo(schema);
  try {
    visit(
      document,
      visitWithTypeInfo(typeInfo, {
        Argument(node) {
          const argument = typeInfo.getArgument();
          if (argument) checkLiteral(node.value, argument.type, node.name.value);
        },
        // A variable's default is a literal too, used when the request's variables leave it out.
        VariableDefinition(node) {
          const type = typeFromAST(schema, node.type) as GraphQLInputType | undefined;
          if (node.defaultValue && type) checkLiteral(node.defaultValue, type, `$${node.variable.name.value}`);
        },
      }),
    );
    return undefined;
  } catch (error) {
    if (error instanceof GraphQLError) return error;
    throw error;
  }
}

/** The variables of an operation whose values may hold a checked scalar, with their types. */
function variablesToCheck(schema: GraphQLSchema, operation: OperationDefinitionNode): { name: string; type: GraphQLInputType }[] {
  return (operation.variableDefinitions ?? []).flatMap((definition) => {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    return type && mayHoldCheckedScalar(type) ? [{ name: definition.variable.name.value, type }] : [];
  });
}

/**
 * What depends on the document alone is worked out once per parsed document: a client repeats its
 * operations, and Apollo hands the gateway the same DocumentNode for the same query text, so the walk
 * of the document with type information is not paid again on every request.
 */
const literalVerdicts = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, { refused: GraphQLError | undefined }>>();
const checkedVariables = new WeakMap<GraphQLSchema, WeakMap<OperationDefinitionNode, { name: string; type: GraphQLInputType }[]>>();

function cachedIn<Key extends object, Value>(caches: WeakMap<GraphQLSchema, WeakMap<Key, Value>>, schema: GraphQLSchema, key: Key, compute: () => Value): Value {
  let cache = caches.get(schema);
  if (!cache) caches.set(schema, (cache = new WeakMap()));
  let value = cache.get(key);
  if (value === undefined) cache.set(key, (value = compute()));
  return value;
}

export function checkScalarInputs(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): void {
  for (const { name, type } of cachedIn(checkedVariables, schema, operation, () => variablesToCheck(schema, operation))) {
    checkValue(variables?.[name], type, `$${name}`);
  }
  const { refused } = cachedIn(literalVerdicts, schema, document, () => ({ refused: checkLiterals(schema, document) }));
  // A new error per request: whatever answers it may add to the one it is given.
  if (refused) throw new GraphQLError(refused.message, { extensions: refused.extensions });
}
