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
  type GraphQLNamedType,
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
    // A fragment's depth is the same wherever it is spread: measured once, so a fragment spread twice
    // at each of many levels costs one pass. One already being measured counts for nothing, so a cycle
    // (refused by graphql's NoFragmentCycles rule, which runs alongside) ends.
    const fragmentDepths = new Map<string, number>();
    const fragmentsMeasured = new Set<string>();
    /** How many selection sets deep the selection set reaches, itself included. */
    const depthOf = (selectionSet: SelectionSetNode): number => 1 + depthBelow(selectionSet);
    const depthBelow = (selectionSet: SelectionSetNode): number => {
      let deepest = 0;
      for (const selection of selectionSet.selections) {
        let depth: number;
        if (selection.kind === Kind.FIELD) depth = selection.selectionSet ? depthOf(selection.selectionSet) : 0;
        else if (selection.kind === Kind.INLINE_FRAGMENT) depth = depthBelow(selection.selectionSet);
        else depth = fragmentDepth(selection.name.value);
        deepest = Math.max(deepest, depth);
      }
      return deepest;
    };
    const fragmentDepth = (name: string): number => {
      const known = fragmentDepths.get(name);
      if (known !== undefined) return known;
      const fragment = fragments.get(name);
      if (!fragment || fragmentsMeasured.has(name)) return 0;
      fragmentsMeasured.add(name);
      const depth = depthBelow(fragment.selectionSet);
      fragmentDepths.set(name, depth);
      return depth;
    };
    return {
      OperationDefinition(operation) {
        const exceeds = fieldsOf(operation.selectionSet, fragments).some(
          (field) => field.selectionSet !== undefined && 1 + depthOf(field.selectionSet) > (isIntrospection(field) ? INTROSPECTION_DEPTH : maxDepth),
        );
        if (exceeds) context.reportError(tooComplex(`Query depth exceeds the limit of ${maxDepth}`));
      },
    };
  };
}

/**
 * The aliases an operation executes: a fragment's count once per spread, as the response holds them
 * (a fragment of 15 aliases spread three times is 45). Each fragment is counted once and its count
 * reused, so fragments that spread each other twice over, level upon level, cost one pass; one being
 * counted counts for nothing the second time (a cycle, which NoFragmentCycles refuses).
 */
export function aliasLimit(maxAliases: number): ValidationRule {
  return (context) => {
    const fragments = fragmentsOf(context.getDocument());
    const fragmentAliases = new Map<string, number>();
    const aliasesIn = (selectionSet: SelectionSetNode): number => {
      let aliases = 0;
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) aliases += (selection.alias ? 1 : 0) + (selection.selectionSet ? aliasesIn(selection.selectionSet) : 0);
        else if (selection.kind === Kind.INLINE_FRAGMENT) aliases += aliasesIn(selection.selectionSet);
        else aliases += aliasesOfFragment(selection.name.value);
      }
      return aliases;
    };
    const aliasesOfFragment = (name: string): number => {
      if (!fragmentAliases.has(name)) {
        fragmentAliases.set(name, 0);
        const fragment = fragments.get(name);
        if (fragment) fragmentAliases.set(name, aliasesIn(fragment.selectionSet));
      }
      return fragmentAliases.get(name)!;
    };
    return {
      OperationDefinition(operation) {
        const aliases = aliasesIn(operation.selectionSet);
        if (aliases > maxAliases) context.reportError(tooComplex(`The document uses ${aliases} aliases; the limit is ${maxAliases}`));
      },
    } satisfies ASTVisitor;
  };
}

function pageArgument(field: FieldNode, definition: GraphQLField<unknown, unknown>): number | undefined {
  const declared = definition.args.find((arg) => arg.name === 'first');
  if (!declared) return undefined;
  const given = field.arguments?.find((arg) => arg.name.value === 'first');
  if (!given) return typeof declared.defaultValue === 'number' ? declared.defaultValue : MAX_PAGE;
  // A size outside 1–200 is refused when the field resolves, which is after this estimate: counted
  // as it is written, a negative one would take its cost off its siblings', and pages of pages
  // beside it would pass.
  const size = given.value.kind === Kind.INT ? Number(given.value.value) : MAX_PAGE;
  return size >= 1 && size <= MAX_PAGE ? size : MAX_PAGE;
}

function fieldDefinition(owner: GraphQLNamedType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (isObjectType(owner) || isInterfaceType(owner)) return owner.getFields()[name];
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
    // A fragment's cost depends only on the type and the page it is spread in: costed once for each,
    // so a fragment spread twice at each of many levels costs one pass (its cost still counts twice).
    // One already being costed counts for nothing, so a cycle (refused by NoFragmentCycles) ends.
    const fragmentCosts = new Map<string, number>();
    const fragmentsCosted = new Set<string>();
    /** Fields are looked up on the innermost type condition around them, else on the parent type. */
    const costOf = (selectionSet: SelectionSetNode, parent: GraphQLNamedType, page: number | undefined, typeCondition?: string): number => {
      const owner = typeCondition ? (schema.getType(typeCondition) ?? parent) : parent;
      let total = 0;
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) total += fieldCost(selection, owner, page);
        else if (selection.kind === Kind.INLINE_FRAGMENT) total += costOf(selection.selectionSet, parent, page, selection.typeCondition?.name.value ?? typeCondition);
        else total += fragmentCost(selection.name.value, parent, page);
      }
      return total;
    };
    const fragmentCost = (name: string, parent: GraphQLNamedType, page: number | undefined): number => {
      const key = `${name} ${parent.name} ${page ?? ''}`;
      const known = fragmentCosts.get(key);
      if (known !== undefined) return known;
      const fragment = fragments.get(name);
      if (!fragment || fragmentsCosted.has(key)) return 0;
      fragmentsCosted.add(key);
      const found = costOf(fragment.selectionSet, parent, page, fragment.typeCondition.name.value);
      fragmentCosts.set(key, found);
      return found;
    };
    const fieldCost = (field: FieldNode, owner: GraphQLNamedType, page: number | undefined): number => {
      if (isIntrospection(field)) return 0;
      const definition = fieldDefinition(owner, field.name.value);
      if (!definition) return 0;
      const type = getNullableType(definition.type);
      const returned = getNamedType(type);
      if (!isCompositeType(returned)) return 0;
      const below = field.selectionSet ? costOf(field.selectionSet, returned, pageArgument(field, definition)) : 0;
      const isPageItems = page !== undefined && (field.name.value === 'nodes' || field.name.value === 'edges');
      if (isPageItems) return 1 + page * (1 + below);
      return 1 + (isListType(type) ? UNPAGED_LIST_SIZE : 1) * below;
    };
    return {
      OperationDefinition(operation) {
        const root = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
        if (!root) return;
        const found = costOf(operation.selectionSet, root, undefined);
        if (found > maxCost) context.reportError(tooComplex(`Query cost ${found} exceeds the limit of ${maxCost}`));
      },
    };
  };
}

/** Depth, alias and cost limits on every document, as the gateway's validation rules. */
export function queryLimitRules(limits: { depth: number; aliases: number; cost: number }): ValidationRule[] {
  return [depthLimit(limits.depth), aliasLimit(limits.aliases), costLimit(limits.cost)];
}
