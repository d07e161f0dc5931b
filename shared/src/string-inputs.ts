import {
  defaultFieldResolver,
  getNamedType,
  getNullableType,
  isInputObjectType,
  isListType,
  isObjectType,
  isScalarType,
  GraphQLID,
  GraphQLString,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { badUserInput, payloadError } from './errors.ts';

/**
 * Contract section 2: every string input, in arguments, filters and inputs alike, refuses NUL and
 * the other C0 control characters, and lone surrogates. Postgres cannot store NUL at all, the others
 * are invisible in every list that shows them, and a lone surrogate would be stored as U+FFFD, so
 * that two different ids became one. Applied here once, to the schema of every subgraph, before any
 * resolver runs, so that no service has to remember it and a new operation is covered as it is added.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is what it is for
const CONTROL_CHARACTER = /[\u0000-\u001F]/;
/** Tab, line feed and carriage return stay allowed where text may span lines. */
// eslint-disable-next-line no-control-regex -- matching control characters is what it is for
const CONTROL_CHARACTER_BUT_LINE_BREAKS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
/** With the `u` flag a well-formed pair is one code point, so only an unpaired surrogate matches. */
const LONE_SURROGATE = /\p{Cs}/u;

/** The input fields that may hold tab and line breaks (contract section 2: a strategy's description alone). */
export const MULTILINE_INPUT_FIELDS: ReadonlySet<string> = new Set(['CreateStrategyInput.description', 'UpdateStrategyInput.description']);

/** Where a refused string sits: the argument, then input fields and list positions, e.g. ['filter', 'symbol']. */
type InputPath = (string | number)[];

type Problem = 'control' | 'surrogate';
interface Refused {
  path: InputPath;
  problem: Problem;
}

function problemOf(value: string, multiline: boolean): Problem | undefined {
  if ((multiline ? CONTROL_CHARACTER_BUT_LINE_BREAKS : CONTROL_CHARACTER).test(value)) return 'control';
  return LONE_SURROGATE.test(value) ? 'surrogate' : undefined;
}

function findIllFormed(value: unknown, type: GraphQLInputType, path: InputPath, multiline: boolean): Refused | undefined {
  if (value === null || value === undefined) return undefined;
  const nullable = getNullableType(type);
  if (isListType(nullable)) {
    // A single value given for a list type is coerced to a one-item list before resolvers see it.
    const items = Array.isArray(value) ? value : [value];
    for (const [index, item] of items.entries()) {
      const found = findIllFormed(item, nullable.ofType, [...path, index], multiline);
      if (found) return found;
    }
    return undefined;
  }
  if (isInputObjectType(nullable)) {
    const fields = nullable.getFields();
    for (const [name, fieldValue] of Object.entries(value as Record<string, unknown>)) {
      const field = fields[name];
      if (!field) continue;
      const found = findIllFormed(fieldValue, field.type, [...path, name], MULTILINE_INPUT_FIELDS.has(`${nullable.name}.${name}`));
      if (found) return found;
    }
    return undefined;
  }
  if (isScalarType(nullable) && (nullable.name === GraphQLString.name || nullable.name === GraphQLID.name) && typeof value === 'string') {
    const problem = problemOf(value, multiline);
    return problem && { path, problem };
  }
  return undefined;
}

function dotted(path: InputPath): string {
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
}

function rule(problem: Problem, allowed: string): string {
  return problem === 'control' ? `must not contain control characters${allowed}` : 'must be well-formed Unicode (no unpaired surrogates)';
}

/** A mutation's `input` answers with its payload's `error` (contract section 4), when the payload has one. */
function answersInPayload(field: GraphQLField<unknown, unknown>, argument: GraphQLArgument): boolean {
  const returned = getNamedType(field.type);
  return argument.name === 'input' && isInputObjectType(getNamedType(argument.type)) && isObjectType(returned) && 'error' in returned.getFields();
}

function guard(field: GraphQLField<unknown, unknown>): void {
  const resolve = field.resolve ?? defaultFieldResolver;
  const argumentsByName = new Map(field.args.map((argument) => [argument.name, argument]));
  field.resolve = (source, args: Record<string, unknown>, context, info) => {
    for (const [name, value] of Object.entries(args)) {
      const argument = argumentsByName.get(name);
      const refused = argument && findIllFormed(value, argument.type, [name], false);
      if (!argument || !refused) continue;
      const { path, problem } = refused;
      if (answersInPayload(field, argument) && path.length > 1) {
        const inputField = path.slice(1).filter((part) => typeof part === 'string').join('.');
        const allowed = MULTILINE_INPUT_FIELDS.has(`${getNamedType(argument.type).name}.${path[1]}`) ? ' other than tab and line breaks' : '';
        return { error: payloadError('VALIDATION_FAILED', `${inputField} ${rule(problem, allowed)}`, inputField) };
      }
      throw badUserInput(`${dotted(path)} ${rule(problem, '')}`, dotted(path));
    }
    return resolve(source, args, context, info);
  };
}

/** Wraps the resolver of every field that takes arguments (root fields and entity fields alike). */
export function refuseIllFormedStrings(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) if (field.args.length > 0) guard(field);
  }
  return schema;
}
