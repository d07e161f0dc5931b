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
 * A symbol's position, exact. An average cost is a quotient (1 @ 1 and 2 @ 2 cost 5/3 each), so the
 * open round trip (from flat to flat) is kept as fractions over one growing denominator,
 * SCALE² × `multiplier`, that each partial close multiplies by the quantity it closed from; every
 * step multiplies a large integer by a small one only. When the position is flat again, the trip's
 * realized PnL is simply its cash (sells minus buys: all cost added has been taken out again), an
 * exact figure over SCALE², and the fractions start afresh.
 */
interface Book {
  /** Signed open quantity, in units of 1/SCALE. */
  quantity: bigint;
  /** Cost basis of the open quantity, over SCALE² × multiplier. */
  openCost: bigint;
  /** Realized PnL of the partial closes of the open trip, over SCALE² × multiplier. */
  openRealized: bigint;
  multiplier: bigint;
  /** Sells minus buys of the open trip, over SCALE². */
  tripCash: bigint;
  /** Realized PnL of finished trips, over SCALE². */
  settledRealized: bigint;
  /** Every fee, over SCALE. */
  fees: bigint;
}

const EMPTY_BOOK: Book = { quantity: 0n, openCost: 0n, openRealized: 0n, multiplier: 1n, tripCash: 0n, settledRealized: 0n, fees: 0n };

const abs = (value: bigint) => (value < 0n ? -value : value);
const signOf = (value: bigint) => (value < 0n ? -1n : value > 0n ? 1n : 0n);

/**
 * One fill by the average-cost method: a fill on the side of the position (or opening one) adds its
 * cost to the basis; a fill against it realizes (price − average cost) per closed unit for a long,
 * (average cost − price) for a short, and leaves the average cost alone; the part of a fill that
 * crosses zero opens the other side at the fill's own price. Every fee is a realized loss.
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
      fees,
      quantity: book.quantity + direction * size,
      openCost: book.openCost + size * price * book.multiplier,
      tripCash: book.tripCash - direction * size * price,
    };
  }

  const closed = size < held ? size : held;
  const tripCash = book.tripCash - direction * closed * price;
  if (closed === held) {
    const opened = size - closed;
    return {
      quantity: direction * opened,
      openCost: opened * price,
      openRealized: 0n,
      multiplier: 1n,
      tripCash: -direction * opened * price,
      settledRealized: book.settledRealized + tripCash,
      fees,
    };
  }

  // Closing `closed` of `held` takes that share of the basis: cost × (held − closed) / held.
  const gainSign = signOf(book.quantity);
  const proceedsAtPrice = closed * price * book.multiplier * held;
  return {
    ...book,
    fees,
    tripCash,
    quantity: book.quantity + direction * closed,
    openRealized: book.openRealized * held + gainSign * (proceedsAtPrice - closed * book.openCost),
    openCost: book.openCost * (held - closed),
    multiplier: book.multiplier * held,
  };
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
  const denominator = SCALE * SCALE * book.multiplier;
  return {
    symbol,
    netQuantity: roundHalfEven(book.quantity, SCALE),
    averageCost: book.quantity === 0n ? null : roundHalfEven(book.openCost, SCALE * book.multiplier * abs(book.quantity)),
    realizedPnl: roundHalfEven(book.settledRealized * book.multiplier + book.openRealized - book.fees * SCALE * book.multiplier, denominator),
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
