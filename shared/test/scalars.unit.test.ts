import { Kind, type ValueNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { DateTimeScalar, DecimalScalar, SignedDecimalScalar, parseDateTime } from '../src/scalars.ts';
import { Decimal } from '../src/decimal.ts';
import { refusal } from '../src/testing/refusal.ts';

function codeOf(run: () => unknown): unknown {
  return refusal(run).extensions.code;
}

describe('DateTime input', () => {
  it.each([
    ['2026-11-21T14:03:07.120Z', '2026-11-21T14:03:07.120Z'],
    ['2026-11-21T14:03:07Z', '2026-11-21T14:03:07.000Z'],
    ['2026-11-21T14:03:07.1Z', '2026-11-21T14:03:07.100Z'],
    ['2026-11-21T14:03:07.120+02:00', '2026-11-21T12:03:07.120Z'],
    ['2026-11-21T14:03:07-05:30', '2026-11-21T19:33:07.000Z'],
    ['2026-12-31T23:30:00-01:00', '2027-01-01T00:30:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['0004-02-29T00:00:00Z', '0004-02-29T00:00:00.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ])('accepts %s (a zone is given) as the instant %s', (input, instant) => {
    expect(parseDateTime(input).toISOString()).toBe(instant);
    expect(DateTimeScalar.parseValue(input)).toEqual(new Date(instant));
  });

  it.each([
    ['2026-11-21T14:03:07.120', 'no zone'],
    ['2026-11-21T14:03:07', 'no zone'],
    ['2026-11-21', 'a date alone'],
    ['2026-02-30T00:00:00Z', 'a day February does not have'],
    ['2026-02-29T00:00:00Z', 'February 29 of a common year'],
    ['0000-06-01T00:00:00Z', 'year 0, which Postgres keeps as 1 BC'],
    ['0001-01-01T00:30:00+01:00', 'an instant in year 0 (UTC)'],
    ['9999-12-31T23:30:00-01:00', 'an instant in year 10000 (UTC)'],
    ['2026-04-31T12:00:00Z', 'April 31'],
    ['2026-13-01T00:00:00Z', 'month 13'],
    ['2026-11-21T25:00:00Z', 'hour 25'],
    ['2026-11-21T14:03:07+25:00', 'an offset of 25 hours'],
    ['2026-11-21 14:03:07Z', 'a space instead of T'],
    ['Sat, 21 Nov 2026 14:03:07 GMT', 'an HTTP date'],
    ['1763733787120', 'epoch milliseconds as a string'],
    ['', 'the empty string'],
  ])('refuses %j (%s) with BAD_USER_INPUT', (input) => {
    expect(codeOf(() => DateTimeScalar.parseValue(input))).toBe('BAD_USER_INPUT');
  });

  it('refuses a JSON number (epoch milliseconds)', () => {
    expect(codeOf(() => DateTimeScalar.parseValue(1763733787120))).toBe('BAD_USER_INPUT');
  });

  it('refuses a number literal in the document, and accepts a string literal', () => {
    const intNode: ValueNode = { kind: Kind.INT, value: '1763733787120' };
    expect(codeOf(() => DateTimeScalar.parseLiteral(intNode, undefined))).toBe('BAD_USER_INPUT');
    const stringNode: ValueNode = { kind: Kind.STRING, value: '2026-11-21T14:03:07.120Z' };
    expect(DateTimeScalar.parseLiteral(stringNode, undefined)).toEqual(new Date('2026-11-21T14:03:07.120Z'));
  });

  it('is shown as ISO-8601 UTC with milliseconds', () => {
    expect(DateTimeScalar.serialize(new Date('2026-11-21T14:03:07+02:00'))).toBe('2026-11-21T12:03:07.000Z');
    expect(DateTimeScalar.serialize(new Date(Date.UTC(2026, 10, 21, 14, 3, 7, 120)))).toBe('2026-11-21T14:03:07.120Z');
  });
});

describe('Decimal scalar', () => {
  it('accepts a string and gives an exact decimal', () => {
    const parsed = DecimalScalar.parseValue('10.500');
    expect(parsed).toBeInstanceOf(Decimal);
    expect((parsed as Decimal).toFixed()).toBe('10.5');
  });

  it('refuses a JSON number, a negative and an exponent with BAD_USER_INPUT', () => {
    expect(codeOf(() => DecimalScalar.parseValue(10.5))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => DecimalScalar.parseValue('-1'))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => DecimalScalar.parseValue('1e3'))).toBe('BAD_USER_INPUT');
  });

  it('refuses number literals in the document', () => {
    expect(codeOf(() => DecimalScalar.parseLiteral({ kind: Kind.INT, value: '10' }, undefined))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => DecimalScalar.parseLiteral({ kind: Kind.FLOAT, value: '10.5' }, undefined))).toBe('BAD_USER_INPUT');
    expect((DecimalScalar.parseLiteral({ kind: Kind.STRING, value: '10.50' }, undefined) as Decimal).toFixed()).toBe('10.5');
  });

  it('is shown canonically', () => {
    expect(DecimalScalar.serialize('10.500')).toBe('10.5');
    expect(DecimalScalar.serialize(new Decimal('0.000'))).toBe('0');
  });

  it('SignedDecimal is output only: shown with its sign, never accepted', () => {
    expect(SignedDecimalScalar.serialize(new Decimal('-4.50'))).toBe('-4.5');
    expect(codeOf(() => SignedDecimalScalar.parseValue('-4.5'))).toBe('BAD_USER_INPUT');
  });
});
