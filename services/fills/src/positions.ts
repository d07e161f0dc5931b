import { Decimal, MAX_FRACTION_DIGITS } from '@ots/shared/decimal';
import type { OrderSide } from './generated/enums.ts';

/** What the position of a fill's symbol needs from it. */
export interface PositionFill {
  id: string;
  symbol: string;
  side: OrderSide;
  quantity: Decimal | string;
  price: Decimal | string;
  fee: Decimal | string;
  executedAt: Date;
}

export interface Position {
  symbol: string;
  /** Buys minus sells: positive long, negative short. */
  netQuantity: Decimal;
  /** Average cost of the open quantity, fees excluded; null when flat. */
  averageCost: Decimal | null;
  realizedPnl: Decimal;
}

/** Wire decimals have at most 10 fraction digits, so every quantity, price and fee is an integer number of these units. */
const SCALE = 10n ** BigInt(MAX_FRACTION_DIGITS);

function scaled(value: Decimal | string): bigint {
  const text = typeof value === 'string' ? value : value.toFixed();
  const [integer = '0', fraction = ''] = text.split('.');
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > MAX_FRACTION_DIGITS || !/^\d+$/.test(integer)) {
    throw new RangeError(`"${text}" is not a non-negative decimal of at most ${MAX_FRACTION_DIGITS} fraction digits`);
  }
  return BigInt(integer + significant.padEnd(MAX_FRACTION_DIGITS, '0'));
}

/**
 * An average cost as one of two arithmetics keeps it. It is a quotient (1 @ 1 and 2 @ 2 cost 5/3
 * each), so no finite decimal holds it, and exactly its denominator can grow by the digits of the
 * open quantity with each add at a price off the average: over tens of thousands of such fills on a
 * position that never goes flat, exact fractions of hundreds of thousands of digits (seconds of
 * work). So a position is first computed with the average bounded (`BOUNDED_AVERAGE`: 40 guard
 * digits below a price's 10, a bound one unit wider per inexact add), and computed again exactly
 * (`EXACT_AVERAGE`) only if the two ends of a figure's bounds round apart, which takes a figure
 * within 10⁻²⁰ of a rounding tie (for a million fills; in practice, one exactly on a tie). Either way
 * the figures shown are those of exact arithmetic.
 */
interface AverageArithmetic<A> {
  /** The average of a position opened at `price`. */
  opened(price: bigint): A;
  /** The average after adding `size` at `price` to `held` (> 0) at `average`. */
  added(average: A, held: bigint, size: bigint, price: bigint): A;
  /** The exact average lies within [low, high] / denominator, in units of 1/SCALE. */
  bounds(average: A): { low: bigint; high: bigint; denominator: bigint };
}

/** The average as a fraction in lowest terms: numerator / denominator. */
interface ExactAverage {
  numerator: bigint;
  denominator: bigint;
}

const EXACT_AVERAGE: AverageArithmetic<ExactAverage> = {
  opened: (price) => ({ numerator: price, denominator: 1n }),
  /**
   * (n·held + q·size·price) / (q·(held + size)), reduced. As gcd(n, q) = 1, a common factor of that
   * fraction divides gcd(held, q) · (held + size), a number of the fills' own size, so the reduction
   * only ever divides a large integer by a small one, never takes the gcd of two large ones.
   */
  added: ({ numerator: n, denominator: q }, held, size, price) => {
    const numerator = n * held + q * size * price;
    const common = gcd(numerator, gcd(q, held) * (held + size));
    return { numerator: numerator / common, denominator: (q * (held + size)) / common };
  },
  bounds: ({ numerator, denominator }) => ({ low: numerator, high: numerator, denominator }),
};

/** Below the 10 fraction digits of a price: what the bounded average's unit of error is worth. */
const GUARD = 10n ** 40n;

/** The average × GUARD, rounded down, and how far above that the exact average may be, in the same units. */
interface BoundedAverage {
  floor: bigint;
  slack: bigint;
}

const BOUNDED_AVERAGE: AverageArithmetic<BoundedAverage> = {
  opened: (price) => ({ floor: price * GUARD, slack: 0n }),
  /**
   * The exact average lies in [floor, floor + slack] / GUARD, so the new one lies in
   * [x, x + slack·held/(held + size)] with x = (floor·held + size·price·GUARD) / (held + size): its
   * floor is x rounded down, and its slack grows by one when that rounding dropped something.
   */
  added: ({ floor, slack }, held, size, price) => {
    const total = floor * held + size * price * GUARD;
    const newHeld = held + size;
    return { floor: total / newHeld, slack: slack + (total % newHeld === 0n ? 0n : 1n) };
  },
  bounds: ({ floor, slack }) => ({ low: floor, high: floor + slack, denominator: GUARD }),
};

/**
 * A symbol's position. A close leaves the average alone, and the realized PnL of the open round trip
 * (from flat to flat) needs no average of its own: it is the trip's cash (sells minus buys) plus the
 * cost basis still open for a long, minus it for a short. So only the average is a quotient.
 */
interface Book<A> {
  /** Signed open quantity, in units of 1/SCALE. */
  quantity: bigint;
  /** Average cost of the open quantity (meaningless when flat). */
  average: A;
  /** Sells minus buys of the open trip, over SCALE². */
  tripCash: bigint;
  /** Realized PnL of finished trips, over SCALE². */
  settledRealized: bigint;
  /** Every fee, over SCALE. */
  fees: bigint;
}

const emptyBook = <A>(arithmetic: AverageArithmetic<A>): Book<A> => ({
  quantity: 0n,
  average: arithmetic.opened(0n),
  tripCash: 0n,
  settledRealized: 0n,
  fees: 0n,
});

const abs = (value: bigint) => (value < 0n ? -value : value);
const signOf = (value: bigint) => (value < 0n ? -1n : value > 0n ? 1n : 0n);

/** Euclid, for non-negative integers: no dependency offers a rational type, and the fills only ever need a gcd with one small side. */
function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/**
 * One fill by the average-cost method: a fill on the side of the position (or opening one) moves the
 * average cost to the quantity-weighted mean; a fill against it realizes (price − average cost) per
 * closed unit for a long, (average cost − price) for a short, and leaves the average cost alone; the
 * part of a fill that crosses zero opens the other side at the fill's own price. Every fee is a
 * realized loss.
 */
function applyFill<A>(arithmetic: AverageArithmetic<A>, book: Book<A>, fill: Pick<PositionFill, 'side' | 'quantity' | 'price' | 'fee'>): Book<A> {
  const size = scaled(fill.quantity);
  const price = scaled(fill.price);
  const direction = fill.side === 'BUY' ? 1n : -1n;
  const fees = book.fees + scaled(fill.fee);
  const held = abs(book.quantity);

  if (held === 0n || signOf(book.quantity) === direction) {
    return {
      ...book,
      average: held === 0n ? arithmetic.opened(price) : arithmetic.added(book.average, held, size, price),
      fees,
      quantity: book.quantity + direction * size,
      tripCash: book.tripCash - direction * size * price,
    };
  }

  const closed = size < held ? size : held;
  const tripCash = book.tripCash - direction * closed * price;
  if (closed === held) {
    const opened = size - closed;
    return {
      quantity: direction * opened,
      average: arithmetic.opened(opened === 0n ? 0n : price),
      tripCash: -direction * opened * price,
      settledRealized: book.settledRealized + tripCash,
      fees,
    };
  }
  return { ...book, fees, tripCash, quantity: book.quantity + direction * closed };
}

/**
 * numerator / denominator rounded half-even to 10 fraction digits (contract section 2), on the exact
 * fraction: a value that lies exactly on a tie rounds as a tie.
 */
export function roundHalfEven(numerator: bigint, denominator: bigint): Decimal {
  const scaledMagnitude = abs(numerator) * SCALE;
  let units = scaledMagnitude / denominator;
  const twiceRemainder = 2n * (scaledMagnitude % denominator);
  if (twiceRemainder > denominator || (twiceRemainder === denominator && units % 2n === 1n)) units += 1n;
  const digits = units.toString().padStart(MAX_FRACTION_DIGITS + 1, '0');
  const text = `${digits.slice(0, -MAX_FRACTION_DIGITS)}.${digits.slice(-MAX_FRACTION_DIGITS)}`;
  return new Decimal(numerator < 0n && units !== 0n ? `-${text}` : text);
}

/** low / denominator rounded, if high / denominator rounds alike (low ≤ high). */
function roundedWithin(low: bigint, high: bigint, denominator: bigint): Decimal | undefined {
  const rounded = roundHalfEven(low, denominator);
  return low === high || rounded.equals(roundHalfEven(high, denominator)) ? rounded : undefined;
}

/** The symbol's position, or undefined when the book's bounds leave a figure's rounding open. */
function positionOf<A>(arithmetic: AverageArithmetic<A>, symbol: string, book: Book<A>): Position | undefined {
  const { quantity } = book;
  const held = abs(quantity);
  const { low, high, denominator } = arithmetic.bounds(book.average);
  const averageCost = quantity === 0n ? null : roundedWithin(low, high, SCALE * denominator);
  // The open trip's realized PnL is its cash plus (long) or minus (short) the open cost basis, average × held.
  const cashAndFees = (book.settledRealized + book.tripCash - book.fees * SCALE) * denominator;
  const realizedPnl =
    quantity < 0n
      ? roundedWithin(cashAndFees - high * held, cashAndFees - low * held, SCALE * SCALE * denominator)
      : roundedWithin(cashAndFees + low * held, cashAndFees + high * held, SCALE * SCALE * denominator);
  if (averageCost === undefined || realizedPnl === undefined) return undefined;
  return { symbol, netQuantity: roundHalfEven(quantity, SCALE), averageCost, realizedPnl };
}

function positionIn<A>(arithmetic: AverageArithmetic<A>, symbol: string, fills: readonly PositionFill[]): Position | undefined {
  let book = emptyBook(arithmetic);
  for (const fill of fills) book = applyFill(arithmetic, book, fill);
  return positionOf(arithmetic, symbol, book);
}

/**
 * Fills take effect in execution order; fills executed in the same millisecond, by id: a stable but
 * arbitrary order (UUIDv7 ids are random below the millisecond), the same on every read.
 */
function inExecutionOrder<T extends Pick<PositionFill, 'executedAt' | 'id'>>(fills: readonly T[]): T[] {
  return [...fills].sort((a, b) => a.executedAt.getTime() - b.executedAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** A strategy's positions, one per symbol it has fills in (flat ones too: they carry realized PnL), by symbol. */
export function computePositions(fills: readonly PositionFill[]): Position[] {
  const bySymbol = new Map<string, PositionFill[]>();
  for (const fill of inExecutionOrder(fills)) {
    const ofSymbol = bySymbol.get(fill.symbol);
    if (ofSymbol) ofSymbol.push(fill);
    else bySymbol.set(fill.symbol, [fill]);
  }
  return [...bySymbol.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([symbol, ofSymbol]) => positionIn(BOUNDED_AVERAGE, symbol, ofSymbol) ?? positionIn(EXACT_AVERAGE, symbol, ofSymbol)!);
}
