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

export function checkScalarInputs(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
): void {
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    const name = definition.variable.name.value;
    if (type && getNamedType(type)) checkValue(variables?.[name], type, `$${name}`);
  }
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const argument = typeInfo.getArgument();
        if (argument) checkLiteral(node.value, argument.type, node.name.value);
      },
    }),
  );
}
