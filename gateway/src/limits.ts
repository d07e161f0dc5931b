import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  type ASTVisitor,
  type FieldNode,
  type GraphQLField,
  type GraphQLType,
  type SelectionSetNode,
  type ValidationRule,
  isObjectType,
  isInterfaceType,
} from 'graphql';
import { fieldsOf, fragmentsOf } from './root-fields.ts';

/** Lists without a `first` argument (an order's fills, a strategy's positions) are costed at this size. */
const UNPAGED_LIST_SIZE = 10;
/** A `first` given by a variable is costed at the largest page, since validation cannot see its value. */
const MAX_PAGE = 200;

/**
 * Introspection is bounded by the schema itself, and the standard query of GraphQL tools nests its
 * type references deeper than the data limit allows; it is measured against this limit instead.
 */
const INTROSPECTION_DEPTH = 20;
const isIntrospection = (field: FieldNode) => field.name.value.startsWith('__');

function tooComplex(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'QUERY_TOO_COMPLEX' } });
}

/** Query depth: the longest chain of nested fields, through fragments. */
export function depthLimit(maxDepth: number): ValidationRule {
  return (context) => {
    const fragments = fragmentsOf(context.getDocument());
    // Stops descending once past the limit, so a deep (or, before validation refuses it, cyclic) document costs little.
    const exceeds = (selectionSet: SelectionSetNode | undefined, fragmentPath: ReadonlySet<string>, level: number, limit: number): boolean => {
      if (!selectionSet) return false;
      if (level >= limit) return true;
      return fieldsOf(selectionSet, fragments, fragmentPath).some(({ field, fragmentPath: inner }) =>
        exceeds(field.selectionSet, inner, level + 1, level === 0 && isIntrospection(field) ? INTROSPECTION_DEPTH : limit),
      );
    };
    return {
      OperationDefinition(operation) {
        if (exceeds(operation.selectionSet, new Set(), 0, maxDepth)) {
          context.reportError(tooComplex(`Query depth exceeds the limit of ${maxDepth}`));
        }
      },
    };
  };
}

/** Aliases anywhere in the document, fragments included. */
export function aliasLimit(maxAliases: number): ValidationRule {
  return (context) => {
    let aliases = 0;
    return {
      Field(field) {
        if (field.alias) aliases += 1;
      },
      Document: {
        leave() {
          if (aliases > maxAliases) context.reportError(tooComplex(`The document uses ${aliases} aliases; the limit is ${maxAliases}`));
        },
      },
    } satisfies ASTVisitor;
  };
}

function pageArgument(field: FieldNode, definition: GraphQLField<unknown, unknown>): number | undefined {
  const declared = definition.args.find((arg) => arg.name === 'first');
  if (!declared) return undefined;
  const given = field.arguments?.find((arg) => arg.name.value === 'first');
  if (!given) return typeof declared.defaultValue === 'number' ? declared.defaultValue : MAX_PAGE;
  return given.value.kind === Kind.INT ? Math.min(Number(given.value.value), MAX_PAGE) : MAX_PAGE;
}

function fieldDefinition(parent: GraphQLType, name: string): GraphQLField<unknown, unknown> | undefined {
  const named = getNamedType(parent);
  if (isObjectType(named) || isInterfaceType(named)) return named.getFields()[name];
  return undefined;
}

/**
 * Estimated cost: a field returning objects costs 1 plus what is selected below it; each item of a
 * page (`nodes`, `edges` under a field with `first`) costs 1 plus its selection, per item of the page
 * size; other lists multiply their selection by UNPAGED_LIST_SIZE. Sized so that
 * `listOrderSubmissions(first: 200)` with strategy and fills fits, in the `nodes` or the `edges` form
 * with `pageInfo`, and a nested page of pages (or several such pages) does not.
 */
export function costLimit(maxCost: number): ValidationRule {
  return (context) => {
    const schema = context.getSchema();
    const fragments = fragmentsOf(context.getDocument());
    const cost = (selectionSet: SelectionSetNode | undefined, parent: GraphQLType, path: ReadonlySet<string>, page?: number): number => {
      if (!selectionSet) return 0;
      let total = 0;
      for (const { field, typeCondition, fragmentPath } of fieldsOf(selectionSet, fragments, path)) {
        if (isIntrospection(field)) continue;
        const owner = typeCondition ? (schema.getType(typeCondition) ?? parent) : parent;
        const definition = fieldDefinition(owner, field.name.value);
        if (!definition) continue;
        const type = getNullableType(definition.type);
        if (!isCompositeType(getNamedType(type))) continue;
        const below = cost(field.selectionSet, getNamedType(type), fragmentPath, pageArgument(field, definition));
        const isPageItems = page !== undefined && (field.name.value === 'nodes' || field.name.value === 'edges');
        if (isPageItems) total += 1 + page * (1 + below);
        else total += 1 + (isListType(type) ? UNPAGED_LIST_SIZE : 1) * below;
      }
      return total;
    };
    return {
      OperationDefinition(operation) {
        const root = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
        if (!root) return;
        const found = cost(operation.selectionSet, root, new Set());
        if (found > maxCost) context.reportError(tooComplex(`Query cost ${found} exceeds the limit of ${maxCost}`));
      },
    };
  };
}

/** Depth, alias and cost limits on every document, as the gateway's validation rules. */
export function queryLimitRules(limits: { depth: number; aliases: number; cost: number }): ValidationRule[] {
  return [depthLimit(limits.depth), aliasLimit(limits.aliases), costLimit(limits.cost)];
}
