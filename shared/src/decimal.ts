import { Decimal as DecimalJs } from 'decimal.js';

/**
 * Exact decimal arithmetic for money and quantities. Precision is far above what 20 integer and
 * 10 fraction digits can produce through sums and products, so only explicit rounding loses digits.
 */
export const Decimal = DecimalJs.clone({ precision: 200, rounding: DecimalJs.ROUND_HALF_EVEN, toExpNeg: -100, toExpPos: 100 });
export type Decimal = InstanceType<typeof Decimal>;

const MAX_INTEGER_DIGITS = 20;
export const MAX_FRACTION_DIGITS = 10;

const UNSIGNED = /^(\d+)(?:\.(\d+))?$/;

export class DecimalFormatError extends Error {}

/** Parses a wire decimal: a non-negative plain string, no exponent, within 20 integer and 10 fraction digits. */
export function parseDecimal(value: unknown): Decimal {
  if (typeof value !== 'string') {
    throw new DecimalFormatError('Decimal values are sent as strings, e.g. "187.25", to keep their precision');
  }
  const match = UNSIGNED.exec(value);
  if (!match) throw new DecimalFormatError(`"${value}" is not a non-negative decimal such as "187.25"`);
  const integer = match[1]!.replace(/^0+(?=\d)/, '');
  const fraction = match[2] ?? '';
  if (integer.length > MAX_INTEGER_DIGITS) {
    throw new DecimalFormatError(`"${value}" has more than ${MAX_INTEGER_DIGITS} integer digits`);
  }
  if (fraction.replace(/0+$/, '').length > MAX_FRACTION_DIGITS) {
    throw new DecimalFormatError(`"${value}" has more than ${MAX_FRACTION_DIGITS} fraction digits`);
  }
  return new Decimal(value);
}

/** Canonical wire form: no exponent, no trailing fraction zeros, "0" for zero (never "-0"). */
export function formatDecimal(value: Decimal | string): string {
  const decimal = typeof value === 'string' ? new Decimal(value) : value;
  if (decimal.isZero()) return '0';
  return decimal.toFixed();
}

/** Derived figures (averages, costs, PnL) are rounded half-even to 10 fraction digits only at the end. */
export function roundDerived(value: Decimal): Decimal {
  return value.toDecimalPlaces(MAX_FRACTION_DIGITS, Decimal.ROUND_HALF_EVEN);
}
