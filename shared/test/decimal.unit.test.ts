import { describe, expect, it } from 'vitest';
import { Decimal, DecimalFormatError, formatDecimal, parseDecimal, roundDerived } from '../src/decimal.ts';

/** Parses a wire value and gives its canonical wire form, as an output field would show it. */
const canonical = (value: string) => formatDecimal(parseDecimal(value));

describe('parseDecimal: what a client may send as a Decimal', () => {
  it.each([
    ['10.500', '10.5'],
    ['0', '0'],
    ['0.0', '0'],
    ['000', '0'],
    ['007.50', '7.5'],
    ['187.25', '187.25'],
    ['100', '100'],
    ['0.0000000001', '0.0000000001'],
    ['12345678901234567890', '12345678901234567890'],
    ['12345678901234567890.1234567891', '12345678901234567890.1234567891'],
  ])('accepts %j and shows it as %j', (input, output) => {
    expect(canonical(input)).toBe(output);
  });

  it('keeps every digit exactly (no float rounding)', () => {
    expect(parseDecimal('0.1').plus(parseDecimal('0.2')).toFixed()).toBe('0.3');
    expect(canonical('99999999999999999999.9999999999')).toBe('99999999999999999999.9999999999');
  });

  it.each<[unknown, string]>([
    [10, 'a JSON number'],
    [10.5, 'a JSON float'],
    [0, 'the number zero'],
    [null, 'null'],
    [undefined, 'undefined'],
    [true, 'a boolean'],
    [{}, 'an object'],
  ])('refuses %j (%s): Decimal values travel as strings', (input) => {
    expect(() => parseDecimal(input)).toThrow(DecimalFormatError);
  });

  it.each([
    ['-1', 'a negative'],
    ['-0', 'a negative zero'],
    ['+1', 'a sign'],
    ['1e5', 'an exponent'],
    ['1E-5', 'an exponent'],
    ['1.5e2', 'an exponent'],
    ['Infinity', 'infinity'],
    ['NaN', 'NaN'],
    ['0x10', 'hex'],
    ['1_000', 'a digit separator'],
    ['1,5', 'a comma'],
    ['.5', 'no integer part'],
    ['5.', 'no fraction digits after the point'],
    [' 1', 'a leading space'],
    ['1 ', 'a trailing space'],
    ['', 'the empty string'],
    ['abc', 'letters'],
  ])('refuses %j (%s)', (input) => {
    expect(() => parseDecimal(input)).toThrow(DecimalFormatError);
  });

  it('refuses more than 20 integer digits', () => {
    expect(() => parseDecimal('123456789012345678901')).toThrow(/20 integer digits/);
    expect(() => parseDecimal('100000000000000000000.5')).toThrow(/20 integer digits/);
  });

  it('refuses more than 10 significant fraction digits', () => {
    expect(() => parseDecimal('1.00000000001')).toThrow(/10 fraction digits/);
    expect(() => parseDecimal('0.12345678901')).toThrow(/10 fraction digits/);
  });

  // The code limits the digits that carry value: zeros that change nothing (trailing fraction zeros,
  // leading integer zeros) do not count. The contract says "at most 20 integer digits and 10 fraction
  // digits" for precision's sake; these values need no more precision than that, so they are accepted
  // and shown canonically. (Reported to the lead as a reading of the contract to confirm.)
  it('counts only digits that carry value: trailing fraction zeros and leading integer zeros are accepted', () => {
    expect(canonical('1.00000000000')).toBe('1');
    expect(canonical('2.500000000000000')).toBe('2.5');
    expect(canonical('0000000000000000000001')).toBe('1');
  });
});

describe('formatDecimal: canonical output', () => {
  it.each([
    [new Decimal('1e-10'), '0.0000000001'],
    [new Decimal('1e25'), '10000000000000000000000000'],
    [new Decimal('-0'), '0'],
    [new Decimal('0.000'), '0'],
    [new Decimal('-4.50'), '-4.5'],
    ['3.1400', '3.14'],
  ])('shows %s as %j: no exponent, no trailing zeros, "0" for zero', (value, text) => {
    expect(formatDecimal(value)).toBe(text);
  });
});

describe('roundDerived: half-even to 10 fraction digits', () => {
  it.each([
    ['0.00000000005', '0'],
    ['0.00000000015', '0.0000000002'],
    ['0.00000000025', '0.0000000002'],
    ['0.00000000035', '0.0000000004'],
    ['0.000000000250001', '0.0000000003'],
    ['2.00000000004999', '2'],
    ['-0.00000000015', '-0.0000000002'],
    ['123.4567890123', '123.4567890123'],
  ])('rounds %s to %s', (input, output) => {
    expect(formatDecimal(roundDerived(new Decimal(input)))).toBe(output);
  });

  it('rounds only at the end: an average of thirds', () => {
    const average = new Decimal('1').plus('1').plus('2').div(3);
    expect(formatDecimal(roundDerived(average))).toBe('1.3333333333');
    expect(formatDecimal(roundDerived(new Decimal(2).div(3)))).toBe('0.6666666667');
  });
});
