import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDecimal } from '@ots/shared/decimal';
import { computePositions, roundHalfEven, type PositionFill } from '../src/positions.ts';

let sequence = 0;
/** Fills executed one millisecond apart, in the order given, unless a test says otherwise. */
function fill(side: 'BUY' | 'SELL', quantity: string, price: string, fee = '0', symbol = 'ACME', executedAt?: Date): PositionFill {
  sequence += 1;
  return {
    id: `00000000-0000-7000-8000-${sequence.toString().padStart(12, '0')}`,
    symbol,
    side,
    quantity,
    price,
    fee,
    executedAt: executedAt ?? new Date(Date.UTC(2026, 0, 1) + sequence),
  };
}

function wire(positions: ReturnType<typeof computePositions>) {
  return positions.map((position) => ({
    symbol: position.symbol,
    netQuantity: formatDecimal(position.netQuantity),
    averageCost: position.averageCost === null ? null : formatDecimal(position.averageCost),
    realizedPnl: formatDecimal(position.realizedPnl),
  }));
}

describe('positions by the average-cost method', () => {
  it('realizes a partial close against the average cost, net of fees (the issue example)', () => {
    const positions = computePositions([fill('BUY', '10', '100'), fill('SELL', '4', '110', '1')]);
    expect(wire(positions)).toEqual([{ symbol: 'ACME', netQuantity: '6', averageCost: '100', realizedPnl: '39' }]);
  });

  it('averages buys by quantity and keeps the average through a sell', () => {
    const positions = computePositions([fill('BUY', '10', '100'), fill('BUY', '30', '120'), fill('SELL', '20', '130')]);
    expect(wire(positions)).toEqual([{ symbol: 'ACME', netQuantity: '20', averageCost: '115', realizedPnl: '300' }]);
  });

  it('reports a flat position with no average cost but its realized PnL', () => {
    const positions = computePositions([fill('BUY', '5', '10', '0.25'), fill('SELL', '5', '12', '0.25')]);
    expect(wire(positions)).toEqual([{ symbol: 'ACME', netQuantity: '0', averageCost: null, realizedPnl: '9.5' }]);
  });

  it('treats shorts symmetrically: a buy covers and realizes average cost minus price', () => {
    const positions = computePositions([fill('SELL', '10', '100'), fill('SELL', '10', '90'), fill('BUY', '4', '80', '1')]);
    expect(wire(positions)).toEqual([{ symbol: 'ACME', netQuantity: '-16', averageCost: '95', realizedPnl: '59' }]);
  });

  it('flips long to short: realizes the closed part and restarts the cost at the flipping price', () => {
    const flipped = computePositions([fill('BUY', '10', '100'), fill('SELL', '15', '110', '2')]);
    expect(wire(flipped)).toEqual([{ symbol: 'ACME', netQuantity: '-5', averageCost: '110', realizedPnl: '98' }]);

    const covered = computePositions([fill('BUY', '10', '100'), fill('SELL', '15', '110', '2'), fill('BUY', '5', '100')]);
    expect(wire(covered)).toEqual([{ symbol: 'ACME', netQuantity: '0', averageCost: null, realizedPnl: '148' }]);
  });

  it('flips short to long the same way', () => {
    const positions = computePositions([fill('SELL', '3', '50'), fill('BUY', '5', '40'), fill('BUY', '2', '46')]);
    expect(wire(positions)).toEqual([{ symbol: 'ACME', netQuantity: '4', averageCost: '43', realizedPnl: '30' }]);
  });

  it('keeps symbols apart and lists them by symbol', () => {
    const positions = computePositions([fill('BUY', '1', '10', '0', 'ZED'), fill('BUY', '2', '20', '0', 'ABC'), fill('SELL', '1', '25', '0', 'ABC')]);
    expect(wire(positions)).toEqual([
      { symbol: 'ABC', netQuantity: '1', averageCost: '20', realizedPnl: '5' },
      { symbol: 'ZED', netQuantity: '1', averageCost: '10', realizedPnl: '0' },
    ]);
  });

  it('applies fills in execution order, then by id, whatever order they arrive in', () => {
    const early = fill('BUY', '10', '100', '0', 'ACME', new Date('2026-01-01T10:00:00.000Z'));
    const late = fill('SELL', '10', '120', '0', 'ACME', new Date('2026-01-01T11:00:00.000Z'));
    // Executed later but listed first: had the sell come first, it would have opened a short at 120.
    expect(wire(computePositions([late, early]))).toEqual([{ symbol: 'ACME', netQuantity: '0', averageCost: null, realizedPnl: '200' }]);

    const sameInstant = new Date('2026-01-01T12:00:00.000Z');
    const first = { ...fill('BUY', '1', '10', '0', 'ACME', sameInstant), id: '00000000-0000-7000-8000-00000000000a' };
    const second = { ...fill('SELL', '2', '20', '0', 'ACME', sameInstant), id: '00000000-0000-7000-8000-00000000000b' };
    expect(wire(computePositions([second, first]))).toEqual([{ symbol: 'ACME', netQuantity: '-1', averageCost: '20', realizedPnl: '10' }]);
  });

  it('is empty without fills', () => {
    expect(computePositions([])).toEqual([]);
  });
});

describe('position decimals', () => {
  it('keeps a non-terminating average exact until the final half-even rounding', () => {
    const positions = computePositions([fill('BUY', '1', '1'), fill('BUY', '2', '2')]);
    expect(wire(positions)[0]?.averageCost).toBe('1.6666666667');
    // 5/3 exactly: selling all 3 at 2 realizes exactly 1, not 0.9999999999 from a rounded average.
    const closed = computePositions([fill('BUY', '1', '1'), fill('BUY', '2', '2'), fill('SELL', '3', '2')]);
    expect(wire(closed)[0]?.realizedPnl).toBe('1');
  });

  it('rounds ties to the even digit, in both directions', () => {
    const downToEven = computePositions([fill('BUY', '0.5', '0.0000000001'), fill('SELL', '0.5', '0.0000000002')]);
    expect(wire(downToEven)[0]?.realizedPnl).toBe('0');
    const upToEven = computePositions([fill('BUY', '1.5', '0.0000000001'), fill('SELL', '1.5', '0.0000000002')]);
    expect(wire(upToEven)[0]?.realizedPnl).toBe('0.0000000002');
    const negativeTie = computePositions([fill('BUY', '1.5', '0.0000000002'), fill('SELL', '1.5', '0.0000000001')]);
    expect(wire(negativeTie)[0]?.realizedPnl).toBe('-0.0000000002');
    const averageTie = computePositions([fill('BUY', '2', '0.0000000002'), fill('BUY', '2', '0.0000000003')]);
    expect(wire(averageTie)[0]?.averageCost).toBe('0.0000000002');
  });

  it('rounds an exact fraction half-even on both sides of zero', () => {
    const round = (numerator: bigint, denominator: bigint) => formatDecimal(roundHalfEven(numerator, denominator));
    expect(round(25n, 10n ** 11n)).toBe('0.0000000002');
    expect(round(35n, 10n ** 11n)).toBe('0.0000000004');
    expect(round(-25n, 10n ** 11n)).toBe('-0.0000000002');
    expect(round(-4n, 10n ** 11n)).toBe('0');
    expect(round(2n, 3n)).toBe('0.6666666667');
    expect(round(-1n, 3n)).toBe('-0.3333333333');
  });

  it('handles the largest wire values without losing a digit', () => {
    const max = '99999999999999999999.9999999999';
    const positions = computePositions([fill('BUY', max, max), fill('BUY', max, '0.0000000001'), fill('SELL', max, max, max)]);
    expect(wire(positions)).toEqual([
      {
        symbol: 'ACME',
        netQuantity: max,
        averageCost: '50000000000000000000',
        // Exactly …5000000000.00000000010000000001 before the final rounding.
        realizedPnl: '4999999999999999999899999999985000000000.0000000001',
      },
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Reference: a lot-by-lot simulation in its own fraction arithmetic. Each fill opens a lot; a
// closing fill takes the same share of every open lot (that is what the average-cost method
// means), realizing each lot's own gain. It shares no code with src/positions.ts.

type Fraction = { n: bigint; d: bigint };
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? (a < 0n ? -a : a) : gcd(b, a % b));
const frac = (n: bigint, d = 1n): Fraction => {
  const g = gcd(n, d) || 1n;
  const s = d < 0n ? -1n : 1n;
  return { n: (s * n) / g, d: (s * d) / g };
};
const add = (a: Fraction, b: Fraction) => frac(a.n * b.d + b.n * a.d, a.d * b.d);
const sub = (a: Fraction, b: Fraction) => add(a, { n: -b.n, d: b.d });
const mul = (a: Fraction, b: Fraction) => frac(a.n * b.n, a.d * b.d);
const div = (a: Fraction, b: Fraction) => frac(a.n * b.d, a.d * b.n);
const lessThan = (a: Fraction, b: Fraction) => a.n * b.d < b.n * a.d;
const parse = (text: string): Fraction => {
  const [whole, part = ''] = text.split('.');
  return frac(BigInt(whole! + part), 10n ** BigInt(part.length));
};
/** Half-even to 10 digits, by comparing the value with the two candidate neighbours. */
const round10 = (value: Fraction): string => {
  const negative = value.n < 0n;
  const magnitude = frac(negative ? -value.n : value.n, value.d);
  const scaled = mul(magnitude, frac(10n ** 10n));
  const below = scaled.n / scaled.d;
  const distanceBelow = sub(scaled, frac(below));
  const half = frac(1n, 2n);
  const pick = lessThan(distanceBelow, half) ? below : lessThan(half, distanceBelow) ? below + 1n : below % 2n === 0n ? below : below + 1n;
  if (pick === 0n) return '0';
  const digits = pick.toString().padStart(11, '0');
  const text = `${digits.slice(0, -10)}.${digits.slice(-10)}`.replace(/\.?0+$/, '');
  return negative ? `-${text}` : text;
};

interface Lot {
  quantity: Fraction;
  price: Fraction;
}

function referencePositions(fills: readonly PositionFill[]) {
  const ordered = [...fills].sort((a, b) => a.executedAt.getTime() - b.executedAt.getTime() || a.id.localeCompare(b.id));
  const books = new Map<string, { side: 1 | -1; lots: Lot[]; realized: Fraction }>();
  for (const f of ordered) {
    const book = books.get(f.symbol) ?? { side: 1 as 1 | -1, lots: [], realized: frac(0n) };
    books.set(f.symbol, book);
    const side = f.side === 'BUY' ? 1 : -1;
    const price = parse(String(f.price));
    let remaining = parse(String(f.quantity));
    book.realized = sub(book.realized, parse(String(f.fee)));
    if (book.lots.length > 0 && book.side !== side) {
      const open = book.lots.reduce((sum, lot) => add(sum, lot.quantity), frac(0n));
      const closing = lessThan(remaining, open) ? remaining : open;
      const share = div(closing, open);
      for (const lot of book.lots) {
        const taken = mul(lot.quantity, share);
        const gain = book.side === 1 ? sub(price, lot.price) : sub(lot.price, price);
        book.realized = add(book.realized, mul(taken, gain));
        lot.quantity = sub(lot.quantity, taken);
      }
      book.lots = book.lots.filter((lot) => lot.quantity.n !== 0n);
      remaining = sub(remaining, closing);
    }
    if (remaining.n !== 0n) {
      book.side = side;
      book.lots.push({ quantity: remaining, price });
    }
  }
  return [...books.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([symbol, book]) => {
      const open = book.lots.reduce((sum, lot) => add(sum, lot.quantity), frac(0n));
      const cost = book.lots.reduce((sum, lot) => add(sum, mul(lot.quantity, lot.price)), frac(0n));
      return {
        symbol,
        netQuantity: round10(mul(open, frac(BigInt(book.side)))),
        averageCost: open.n === 0n ? null : round10(div(cost, open)),
        realizedPnl: round10(book.realized),
      };
    });
}

/** A wire decimal: up to 12 significant digits, 0–10 of them after the point, > 0 unless zero is allowed. */
const decimalText = (allowZero: boolean) =>
  fc
    .tuple(fc.bigInt({ min: allowZero ? 0n : 1n, max: 10n ** 12n }), fc.integer({ min: 0, max: 10 }))
    .map(([units, scale]) => {
      const digits = units.toString().padStart(scale + 1, '0');
      return scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
    });

/** Small quantities and a handful of prices make crossings and ties common. */
const fillArbitrary = fc.record({
  symbol: fc.constantFrom('AAA', 'BBB'),
  side: fc.constantFrom('BUY' as const, 'SELL' as const),
  quantity: fc.oneof(fc.constantFrom('1', '2', '3', '0.5', '7'), decimalText(false)),
  price: fc.oneof(fc.constantFrom('100', '99.5', '101', '0.0000000003'), decimalText(false)),
  fee: fc.oneof(fc.constant('0'), decimalText(true)),
  minute: fc.integer({ min: 0, max: 5 }),
  id: fc.uuid({ version: 7 }),
});

describe('positions against the lot-by-lot reference', () => {
  it('agree on every figure for any fill sequence', () => {
    fc.assert(
      fc.property(fc.array(fillArbitrary, { maxLength: 40 }), (generated) => {
        const fills: PositionFill[] = generated.map((g) => ({
          id: g.id,
          symbol: g.symbol,
          side: g.side,
          quantity: g.quantity,
          price: g.price,
          fee: g.fee,
          executedAt: new Date(Date.UTC(2026, 0, 1, 0, g.minute)),
        }));
        expect(wire(computePositions(fills))).toEqual(referencePositions(fills));
      }),
      { numRuns: 400 },
    );
  });

  it('net quantity is always buys minus sells, and the position is flat exactly when it has no average cost', () => {
    fc.assert(
      fc.property(fc.array(fillArbitrary, { minLength: 1, maxLength: 30 }), (generated) => {
        const fills = generated.map((g, index) => ({ ...g, executedAt: new Date(Date.UTC(2026, 0, 1) + index) }));
        for (const position of computePositions(fills)) {
          const net = fills
            .filter((f) => f.symbol === position.symbol)
            .reduce((sum, f) => add(sum, mul(parse(f.quantity), frac(f.side === 'BUY' ? 1n : -1n))), frac(0n));
          expect(formatDecimal(position.netQuantity)).toBe(round10(net));
          expect(position.averageCost === null).toBe(net.n === 0n);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('positions of long histories', () => {
  it('computes 64,000 fills of a long that never goes flat in well under a second, exactly', () => {
    // When each partial close multiplied the fractions by the open quantity, these fills took 40 s.
    const fills = [fill('BUY', '1000', '100.25', '0.01')];
    while (fills.length < 64_000) fills.push(fills.length % 2 === 1 ? fill('SELL', '0.5', '101.75', '0.01') : fill('BUY', '0.5', '100.25', '0.01'));

    const started = performance.now();
    const positions = computePositions(fills);
    const elapsed = performance.now() - started;

    // 32,000 sells of 0.5 each realize (101.75 − 100.25) × 0.5 = 0.75; 64,000 fees of 0.01 cost 640.
    expect(wire(positions)).toEqual([{ symbol: 'ACME', netQuantity: '999.5', averageCost: '100.25', realizedPnl: '23360' }]);
    expect(elapsed).toBeLessThan(2000);
  });

  it('computes 64,000 fills at varying prices on a long that never goes flat in well under a second, as exact arithmetic does', () => {
    // Exact fractions grew by the open quantity's digits with each add off the average: 10 s for these.
    let seed = 1;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const varying = (count: number) => {
      const fills = [fill('BUY', '1000000', '186.25')];
      while (fills.length < count) fills.push(fill(fills.length % 2 === 1 ? 'SELL' : 'BUY', (random() * 10 + 0.0001).toFixed(4), (180 + random() * 10).toFixed(2), '0.01'));
      return fills;
    };
    // Exactly as the lot-by-lot reference, on as many fills as it computes quickly.
    const checked = varying(100);
    expect(wire(computePositions(checked))).toEqual(referencePositions(checked));

    const fills = varying(64_000);
    const started = performance.now();
    const [position] = computePositions(fills);
    const elapsed = performance.now() - started;
    const net = fills.reduce((sum, f) => add(sum, mul(parse(String(f.quantity)), frac(f.side === 'BUY' ? 1n : -1n))), frac(0n));
    expect(formatDecimal(position!.netQuantity)).toBe(round10(net));
    expect(elapsed).toBeLessThan(2000);
  });

  it('rounds a figure that lies exactly on a tie as exact arithmetic does, however the average was reached', () => {
    // 1 @ 1 and 2 @ 2 average 5/3, which no bounded arithmetic holds; adding 1 @ 3.0000000006 makes it
    // 2.00000000015 exactly, half-even 2.0000000002; selling 1 @ 3 realizes 0.99999999985, half-even 0.9999999998.
    const fills = [fill('BUY', '1', '1'), fill('BUY', '2', '2'), fill('BUY', '1', '3.0000000006')];
    expect(wire(computePositions(fills))).toEqual([{ symbol: 'ACME', netQuantity: '4', averageCost: '2.0000000002', realizedPnl: '0' }]);
    fills.push(fill('SELL', '1', '3'));
    expect(wire(computePositions(fills))).toEqual([{ symbol: 'ACME', netQuantity: '3', averageCost: '2.0000000002', realizedPnl: '0.9999999998' }]);
  });

  it('keeps an average that never settles exact over many round trips of a partial position', () => {
    // From 5/3, each sell of 1 @ 2 and buy of 1 @ 2 moves the average a third of the way to 2:
    // after n pairs it is 2 − (2/3)ⁿ/3, and the sells have realized 1 − (2/3)ⁿ.
    const pairs = 30n;
    const fills = [fill('BUY', '1', '1'), fill('BUY', '2', '2')];
    for (let pair = 0n; pair < pairs; pair++) fills.push(fill('SELL', '1', '2'), fill('BUY', '1', '2'));

    expect(wire(computePositions(fills))).toEqual([
      {
        symbol: 'ACME',
        netQuantity: '3',
        averageCost: round10(frac(2n * 3n ** (pairs + 1n) - 2n ** pairs, 3n ** (pairs + 1n))),
        realizedPnl: round10(frac(3n ** pairs - 2n ** pairs, 3n ** pairs)),
      },
    ]);
  });
});
