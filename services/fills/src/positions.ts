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
 * A symbol's position, exact. An average cost is a quotient (1 @ 1 and 2 @ 2 cost 5/3 each), so it is
 * kept as a fraction in lowest terms. A close leaves the average alone, and the realized PnL of the
 * open round trip (from flat to flat) needs no fraction of its own: it is the trip's cash (sells
 * minus buys) plus the cost basis still open for a long, minus it for a short. So the fraction changes
 * only when a fill adds to the position, and its size is that of the exact average, whatever the
 * number of fills.
 */
interface Book {
  /** Signed open quantity, in units of 1/SCALE. */
  quantity: bigint;
  /** Average cost of the open quantity, in units of 1/SCALE: averageNumerator / averageDenominator, in lowest terms. */
  averageNumerator: bigint;
  averageDenominator: bigint;
  /** Sells minus buys of the open trip, over SCALE². */
  tripCash: bigint;
  /** Realized PnL of finished trips, over SCALE². */
  settledRealized: bigint;
  /** Every fee, over SCALE. */
  fees: bigint;
}

const EMPTY_BOOK: Book = { quantity: 0n, averageNumerator: 0n, averageDenominator: 1n, tripCash: 0n, settledRealized: 0n, fees: 0n };

const abs = (value: bigint) => (value < 0n ? -value : value);
const signOf = (value: bigint) => (value < 0n ? -1n : value > 0n ? 1n : 0n);

/** Euclid, for non-negative integers: no dependency offers a rational type, and the fills only ever need a gcd with one small side. */
function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/**
 * The average after adding `size` at `price` to `held` at average n/q (in lowest terms):
 * (n·held + q·size·price) / (q·(held + size)), reduced. As gcd(n, q) = 1, a common factor of that
 * fraction divides gcd(held, q) · (held + size), a number of the fills' own size, so the reduction
 * only ever divides a large integer by a small one, never takes the gcd of two large ones.
 */
function addedAverage(book: Book, held: bigint, size: bigint, price: bigint): Pick<Book, 'averageNumerator' | 'averageDenominator'> {
  if (held === 0n) return { averageNumerator: price, averageDenominator: 1n };
  const numerator = book.averageNumerator * held + book.averageDenominator * size * price;
  const common = gcd(numerator, gcd(book.averageDenominator, held) * (held + size));
  return { averageNumerator: numerator / common, averageDenominator: (book.averageDenominator * (held + size)) / common };
}

/**
 * One fill by the average-cost method: a fill on the side of the position (or opening one) moves the
 * average cost to the quantity-weighted mean; a fill against it realizes (price − average cost) per
 * closed unit for a long, (average cost − price) for a short, and leaves the average cost alone; the
 * part of a fill that crosses zero opens the other side at the fill's own price. Every fee is a
 * realized loss.
 */
function applyFill(book: Book, fill: Pick<PositionFill, 'side' | 'quantity' | 'price' | 'fee'>): Book {
  const size = scaled(fill.quantity);
  const price = scaled(fill.price);
  const direction = fill.side === 'BUY' ? 1n : -1n;
  const fees = book.fees + scaled(fill.fee);
  const held = abs(book.quantity);

  if (held === 0n || signOf(book.quantity) === direction) {
    return {
      ...book,
      ...addedAverage(book, held, size, price),
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
      averageNumerator: opened === 0n ? 0n : price,
      averageDenominator: 1n,
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

function positionOf(symbol: string, book: Book): Position {
  const { quantity, averageNumerator, averageDenominator } = book;
  // The open trip's realized PnL is its cash plus (long) or minus (short) the open cost basis, average × held.
  const openBasis = signOf(quantity) * averageNumerator * abs(quantity);
  const cashAndFees = book.settledRealized + book.tripCash - book.fees * SCALE;
  return {
    symbol,
    netQuantity: roundHalfEven(quantity, SCALE),
    averageCost: quantity === 0n ? null : roundHalfEven(averageNumerator, SCALE * averageDenominator),
    realizedPnl: roundHalfEven(cashAndFees * averageDenominator + openBasis, SCALE * SCALE * averageDenominator),
  };
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
  const books = new Map<string, Book>();
  for (const fill of inExecutionOrder(fills)) books.set(fill.symbol, applyFill(books.get(fill.symbol) ?? EMPTY_BOOK, fill));
  return [...books.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([symbol, book]) => positionOf(symbol, book));
}
