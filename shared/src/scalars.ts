import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { DecimalFormatError, Decimal, formatDecimal, parseDecimal } from './decimal.ts';

function refuse(message: string): never {
  throw new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

function literalString(ast: ValueNode, typeName: string): string {
  if (ast.kind !== Kind.STRING) {
    refuse(`${typeName} values are sent as strings${ast.kind === Kind.INT || ast.kind === Kind.FLOAT ? ', not numbers' : ''}`);
  }
  return ast.value;
}

function decimalFrom(value: unknown): Decimal {
  try {
    return parseDecimal(value);
  } catch (error) {
    if (error instanceof DecimalFormatError) refuse(error.message);
    throw error;
  }
}

/** How both decimal scalars answer: a Decimal or a decimal string, formatted. */
function decimalOutput(typeName: string): (value: unknown) => string {
  return (value) => {
    if (typeof value === 'string' || value instanceof Decimal) return formatDecimal(value);
    throw new GraphQLError(`${typeName} cannot represent a non-decimal value`);
  };
}

/** Non-negative decimal carried as a string; parsed to an exact `Decimal`, never a float. */
export const DecimalScalar = new GraphQLScalarType<Decimal, string>({
  name: 'Decimal',
  description: 'A non-negative decimal number as a string, e.g. "187.25": at most 20 integer and 10 fraction digits.',
  serialize: decimalOutput('Decimal'),
  parseValue: decimalFrom,
  parseLiteral: (ast) => decimalFrom(literalString(ast, 'Decimal')),
});

/** Signed decimal output (position quantities and PnL); never accepted as input. */
export const SignedDecimalScalar = new GraphQLScalarType<string, string>({
  name: 'SignedDecimal',
  description: 'A decimal number as a string that may be negative, e.g. "-4.5". Output only.',
  serialize: decimalOutput('SignedDecimal'),
  parseValue: () => refuse('SignedDecimal is an output type'),
  parseLiteral: () => refuse('SignedDecimal is an output type'),
});

const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

export function parseDateTime(value: unknown): Date {
  if (typeof value !== 'string') refuse('DateTime values are ISO-8601 strings such as "2026-11-21T14:03:07.120Z"');
  const match = ISO_UTC.exec(value);
  const date = match ? new Date(value) : undefined;
  if (!match || !date || Number.isNaN(date.getTime())) {
    refuse(`"${value}" is not an ISO-8601 date-time with a time zone, e.g. "2026-11-21T14:03:07.120Z"`);
  }
  // Date accepts 2026-02-31 and rolls it over; a calendar date that does not exist is refused.
  const [, y, mo, d] = match;
  const offsetFree = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (offsetFree.getUTCMonth() !== Number(mo) - 1 || offsetFree.getUTCDate() !== Number(d)) {
    refuse(`"${value}" is not a calendar date`);
  }
  // Postgres keeps year 0 as 1 BC, which comes back as year 1; a year past 9999 is shown
  // "+010000-…", which is no DateTime this API takes.
  if (date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) refuse(`"${value}" is outside the years 0001 to 9999 (UTC)`);
  // A Date holds whole milliseconds: finer digits are cut off, which a "strictly before" bound must undo.
  if (/[1-9]/.test(match[7]?.slice(3) ?? '')) Object.defineProperty(date, WITHIN_MILLISECOND, { value: true });
  return date;
}

const WITHIN_MILLISECOND = Symbol('named an instant within its millisecond');

/**
 * The bound of a "strictly before" filter on times stored to the millisecond: a DateTime of more than
 * three fraction digits parses to the start of its millisecond, and `t < 07.1205` is `t < 07.121`, not
 * `t < 07.120` (which would leave out a row at 07.120). "Strictly after" needs nothing: `t > 07.1205`
 * is `t > 07.120` already.
 */
export function strictlyBeforeBound(date: Date): Date {
  return WITHIN_MILLISECOND in date ? new Date(date.getTime() + 1) : date;
}

/** ISO-8601 UTC with milliseconds on output; any ISO-8601 instant with a zone on input. */
export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An ISO-8601 UTC instant with milliseconds, e.g. "2026-11-21T14:03:07.120Z".',
  serialize(value) {
    const date = value instanceof Date ? value : new Date(value as string);
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime cannot represent an invalid date');
    return date.toISOString();
  },
  parseValue: parseDateTime,
  parseLiteral: (ast) => parseDateTime(literalString(ast, 'DateTime')),
});
