import { describe, expect, it } from 'vitest';
import { Decimal, formatDecimal } from '@ots/shared/decimal';
import { parseUuid, type Uuid } from '@ots/shared/ids';
import {
  averageFillPrice,
  checkFill,
  CANCELLABLE_STATUSES,
  checkStrategyStatus,
  decideCancel,
  decideFill,
  decideReplace,
  ORDER_TRANSITIONS,
  validateReplacement,
  isSameSubmission,
  remainingQuantity,
  strategyUnavailable,
  validateSubmission,
  type FillState,
  type OrderDraft,
  type SubmitOrderInput,
} from '../src/domain.ts';
import type { OrderStatus, OrderType } from '../src/generated/enums.ts';

const d = (value: string) => new Decimal(value);
const uuid = (text: string): Uuid => parseUuid(text)!;

function input(overrides: Partial<SubmitOrderInput> = {}): SubmitOrderInput {
  return { symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: d('10'), ...overrides };
}

function refusal(overrides: Partial<SubmitOrderInput>) {
  const result = validateSubmission(input(overrides));
  if (result.ok) throw new Error('expected a refusal');
  return result.error;
}

function draft(overrides: Partial<SubmitOrderInput> = {}): OrderDraft {
  const result = validateSubmission(input(overrides));
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

describe('validateSubmission', () => {
  it('normalises a valid market order: symbol upper-cased, time in force DAY, no prices', () => {
    expect(draft({ symbol: 'brk.b', clientOrderId: 'a.B_c:1-2' })).toEqual({
      clientOrderId: 'a.B_c:1-2',
      strategyId: null,
      symbol: 'BRK.B',
      side: 'BUY',
      type: 'MARKET',
      timeInForce: 'DAY',
      quantity: d('10'),
      limitPrice: null,
      stopPrice: null,
    });
  });

  it('keeps an explicit time in force and treats an explicit null as the DAY default', () => {
    expect(draft({ timeInForce: 'IOC' }).timeInForce).toBe('IOC');
    expect(draft({ timeInForce: null }).timeInForce).toBe('DAY');
  });

  it('accepts every symbol character of the contract: A-Z, 0-9, ".", "/", "-", 1 to 16 of them', () => {
    expect(draft({ symbol: 'btc/usd-perp.2' }).symbol).toBe('BTC/USD-PERP.2');
    expect(draft({ symbol: 'A' }).symbol).toBe('A');
    expect(draft({ symbol: 'ABCDEFGHIJKLMNOP' }).symbol).toBe('ABCDEFGHIJKLMNOP');
  });

  it.each([
    ['', 'symbol must be 1 to 16 characters long, got 0'],
    ['ABCDEFGHIJKLMNOPQ', 'symbol must be 1 to 16 characters long, got 17'],
    ['AA PL', 'may contain only'],
    ['AAPL_', 'may contain only'],
    ['AAPL$', 'may contain only'],
    // Upper-casing would turn these into A-Z letters; they are refused as given.
    ['straße', 'may contain only'],
    ['ıbm', 'may contain only'],
    ['ÄPPLE', 'may contain only'],
  ])('refuses the symbol %j with VALIDATION_FAILED on symbol (%s)', (symbol, message) => {
    const error = refusal({ symbol });
    expect(error).toMatchObject({ code: 'VALIDATION_FAILED', field: 'symbol' });
    expect(error.message).toContain(message);
  });

  it('accepts clientOrderIds of 1 and 64 characters of [A-Za-z0-9._:-]', () => {
    expect(draft({ clientOrderId: 'x' }).clientOrderId).toBe('x');
    expect(draft({ clientOrderId: 'a'.repeat(64) }).clientOrderId).toBe('a'.repeat(64));
  });

  it.each(['', 'a'.repeat(65), 'order 1', 'order/1', 'ordér', 'order#1'])('refuses the clientOrderId %j', (clientOrderId) => {
    expect(refusal({ clientOrderId })).toMatchObject({ code: 'VALIDATION_FAILED', field: 'clientOrderId' });
  });

  it('refuses a zero quantity', () => {
    expect(refusal({ quantity: d('0') })).toEqual({
      code: 'VALIDATION_FAILED',
      field: 'quantity',
      message: 'quantity must be greater than 0',
    });
  });

  const priceRules: [OrderType, boolean, boolean][] = [
    ['MARKET', false, false],
    ['LIMIT', true, false],
    ['STOP', false, true],
    ['STOP_LIMIT', true, true],
  ];

  it.each(priceRules)('a %s order: limitPrice required=%s, stopPrice required=%s; each refused where not required', (type, needsLimit, needsStop) => {
    const limitPrice = needsLimit ? d('100') : null;
    const stopPrice = needsStop ? d('90') : null;
    expect(validateSubmission(input({ type, limitPrice, stopPrice })).ok).toBe(true);
    if (needsLimit) {
      expect(refusal({ type, stopPrice })).toMatchObject({ field: 'limitPrice', message: `limitPrice is required for ${type} orders` });
      expect(refusal({ type, stopPrice, limitPrice: d('0') })).toMatchObject({ field: 'limitPrice', message: 'limitPrice must be greater than 0' });
    } else {
      expect(refusal({ type, stopPrice, limitPrice: d('100') })).toMatchObject({
        field: 'limitPrice',
        message: `limitPrice is not allowed on ${type} orders`,
      });
    }
    if (needsStop) {
      expect(refusal({ type, limitPrice })).toMatchObject({ field: 'stopPrice', message: `stopPrice is required for ${type} orders` });
      expect(refusal({ type, limitPrice, stopPrice: d('0') })).toMatchObject({ field: 'stopPrice', message: 'stopPrice must be greater than 0' });
    } else {
      expect(refusal({ type, limitPrice, stopPrice: d('90') })).toMatchObject({
        field: 'stopPrice',
        message: `stopPrice is not allowed on ${type} orders`,
      });
    }
  });

  it('reports the first broken rule in input order', () => {
    expect(refusal({ clientOrderId: '', symbol: '', quantity: d('0') }).field).toBe('clientOrderId');
    expect(refusal({ symbol: '', quantity: d('0') }).field).toBe('symbol');
    expect(refusal({ quantity: d('0'), limitPrice: d('1') }).field).toBe('quantity');
  });

  it('keeps the strategyId the resolver parsed', () => {
    expect(draft({ strategyId: uuid('0190F5A2-0000-7000-8000-00000000000A') }).strategyId).toBe('0190f5a2-0000-7000-8000-00000000000a');
    expect(draft({}).strategyId).toBeNull();
  });
});

describe('isSameSubmission', () => {
  const stored = draft({ clientOrderId: 'c1', type: 'STOP_LIMIT', limitPrice: d('10.5'), stopPrice: d('10'), symbol: 'aapl' });

  it('treats a retry with equal values in other spellings as the same order', () => {
    const retry = draft({ clientOrderId: 'c1', type: 'STOP_LIMIT', limitPrice: d('10.500'), stopPrice: d('10.0'), symbol: 'AAPL', timeInForce: 'DAY', quantity: d('10.0000') });
    expect(isSameSubmission(stored, retry)).toBe(true);
  });

  it.each<[string, Partial<OrderDraft>]>([
    ['strategyId', { strategyId: uuid('0190f5a2-0000-7000-8000-00000000000a') }],
    ['symbol', { symbol: 'MSFT' }],
    ['side', { side: 'SELL' }],
    ['type', { type: 'LIMIT', stopPrice: null }],
    ['timeInForce', { timeInForce: 'GTC' }],
    ['quantity', { quantity: d('10.0000000001') }],
    ['limitPrice', { limitPrice: d('10.6') }],
    ['stopPrice', { stopPrice: null }],
  ])('sees a different %s as a different order', (_field, change) => {
    expect(isSameSubmission(stored, { ...stored, ...change })).toBe(false);
  });
});

describe('checkStrategyStatus', () => {
  it('accepts only an ACTIVE strategy', () => {
    expect(checkStrategyStatus('s', 'ACTIVE').ok).toBe(true);
    expect(checkStrategyStatus('s', 'PAUSED')).toMatchObject({ ok: false, error: { code: 'STRATEGY_NOT_ACTIVE', field: 'strategyId' } });
    expect(checkStrategyStatus('s', 'ARCHIVED')).toMatchObject({ ok: false, error: { code: 'STRATEGY_NOT_ACTIVE', field: 'strategyId' } });
    expect(checkStrategyStatus('s', null)).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', field: 'strategyId' } });
  });

  it('gives an unanswered check no field: nothing the client sent is wrong', () => {
    expect(strategyUnavailable()).toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE', field: null });
  });
});

describe('the transition table (contract section 3)', () => {
  const id = '0190f5a2-0000-7000-8000-00000000000a';
  const cancelledAt = new Date('2026-11-21T14:05:00.004Z');
  const replacedAt = new Date('2026-11-21T14:06:00.500Z');
  const before = new Date(cancelledAt.getTime() - 60_000);
  const at = (date: Date, deltaMs: number) => new Date(date.getTime() + deltaMs);

  const order = (status: OrderStatus, filled = '0', notional = '0'): FillState => ({
    status,
    quantity: d('10'),
    filledQuantity: d(filled),
    fillNotional: d(notional),
    cancelledAt: status === 'CANCELLED' ? cancelledAt : null,
    replacedAt: status === 'REPLACED' ? replacedAt : null,
  });
  const fill = (quantity: string, price = '100', executedAt = before) => ({ quantity: d(quantity), price: d(price), executedAt });

  const statuses = Object.keys(ORDER_TRANSITIONS) as OrderStatus[];

  it('covers every status of the contract, and the unit tests below read it rather than restate it', () => {
    expect(statuses.sort()).toEqual(['CANCELLED', 'FILLED', 'PARTIALLY_FILLED', 'REPLACED', 'SUBMITTED']);
    expect(CANCELLABLE_STATUSES).toEqual(['SUBMITTED', 'PARTIALLY_FILLED']);
  });

  // Which status accepts which action: the contract's diagram, one row per status.
  it.each<[OrderStatus, string, string, string]>([
    ['SUBMITTED', 'CANCELLED', 'REPLACED', 'any'],
    ['PARTIALLY_FILLED', 'CANCELLED', 'REPLACED', 'any'],
    ['FILLED', 'refused', 'refused', 'refused'],
    ['CANCELLED', 'unchanged', 'refused', 'executed at or before cancelledAt'],
    ['REPLACED', 'refused', 'refused', 'executed at or before replacedAt'],
  ])('%s: cancel → %s, replace → %s, fill: %s', (status, cancel, replace, fills) => {
    const cancelDecision = decideCancel(status, id);
    expect(cancelDecision.kind === 'cancel' ? cancelDecision.to : cancelDecision.kind).toBe(cancel);
    const replaceDecision = decideReplace(status, id);
    expect(replaceDecision.kind === 'replace' ? replaceDecision.to : replaceDecision.kind).toBe(replace);
    const filled = status === 'FILLED' ? '10' : '3';
    const early = decideFill(order(status, filled), false, fill('1', '100', before)).outcome;
    const late = decideFill(order(status, filled), false, fill('1', '100', at(replacedAt, 60_000))).outcome;
    const description = { any: ['APPLIED', 'APPLIED'], refused: ['NOT_FILLABLE', 'NOT_FILLABLE'] }[fills] ?? ['APPLIED', 'NOT_FILLABLE'];
    expect([early, late]).toEqual(description);
  });

  it('refusals name the order and the rule, with `field: id`', () => {
    expect(decideCancel('FILLED', id)).toEqual({
      kind: 'refused',
      error: {
        code: 'ORDER_NOT_CANCELLABLE',
        field: 'id',
        message: `Order submission ${id} is FILLED; only SUBMITTED or PARTIALLY_FILLED orders can be cancelled`,
      },
    });
    expect(decideCancel('REPLACED', id)).toMatchObject({ kind: 'refused', error: { code: 'ORDER_NOT_CANCELLABLE', field: 'id' } });
    for (const status of ['FILLED', 'CANCELLED', 'REPLACED'] as const) {
      expect(decideReplace(status, id)).toEqual({
        kind: 'refused',
        error: {
          code: 'ORDER_NOT_REPLACEABLE',
          field: 'id',
          message: `Order submission ${id} is ${status}; only SUBMITTED or PARTIALLY_FILLED orders can be replaced`,
        },
      });
    }
  });

  it('fill: SUBMITTED → PARTIALLY_FILLED for part of the quantity', () => {
    expect(decideFill(order('SUBMITTED'), false, fill('4', '2.5'))).toEqual({
      outcome: 'APPLIED',
      next: { status: 'PARTIALLY_FILLED', quantity: d('10'), filledQuantity: d('4'), fillNotional: d('10'), cancelledAt: null, replacedAt: null },
    });
  });

  it('fill: SUBMITTED → FILLED for the whole quantity', () => {
    expect(decideFill(order('SUBMITTED'), false, fill('10'))).toMatchObject({ outcome: 'APPLIED', next: { status: 'FILLED' } });
  });

  it('fill: PARTIALLY_FILLED stays PARTIALLY_FILLED until the remaining quantity reaches 0, then FILLED', () => {
    const partial = decideFill(order('PARTIALLY_FILLED', '4', '400'), false, fill('5.9999999999', '101'));
    expect(partial).toMatchObject({ outcome: 'APPLIED', next: { status: 'PARTIALLY_FILLED' } });
    const full = decideFill(order('PARTIALLY_FILLED', '4', '400'), false, fill('6', '101'));
    expect(full).toMatchObject({ outcome: 'APPLIED', next: { status: 'FILLED', filledQuantity: d('10'), fillNotional: d('1006') } });
  });

  it('fill: FILLED takes no fill, whenever it was executed', () => {
    expect(decideFill(order('FILLED', '10'), false, fill('1', '100', before))).toEqual({ outcome: 'NOT_FILLABLE' });
  });

  describe.each<['CANCELLED' | 'REPLACED', Date]>([
    ['CANCELLED', cancelledAt],
    ['REPLACED', replacedAt],
  ])('late fills on a %s order', (status, closedAt) => {
    it.each<[string, number, string]>([
      ['equal to', 0, 'APPLIED'],
      ['1 ms before', -1, 'APPLIED'],
      ['1 ms after', 1, 'NOT_FILLABLE'],
    ])('executedAt %s the instant it took effect → %s', (_edge, deltaMs, outcome) => {
      expect(decideFill(order(status, '3', '300'), false, fill('2', '100', at(closedAt, deltaMs))).outcome).toBe(outcome);
    });

    it('is applied within the quantity: beyond the remaining quantity is EXCEEDS_REMAINING', () => {
      expect(decideFill(order(status, '3', '300'), false, fill('7.0000000001', '100', closedAt))).toEqual({ outcome: 'EXCEEDS_REMAINING' });
    });
  });

  it('late fill: a partial one leaves a CANCELLED order CANCELLED with its cancelledAt', () => {
    expect(decideFill(order('CANCELLED', '3', '300'), false, fill('2', '100', cancelledAt))).toMatchObject({
      outcome: 'APPLIED',
      next: { status: 'CANCELLED', filledQuantity: d('5'), cancelledAt },
    });
  });

  it('late fill: one that completes a CANCELLED order makes it FILLED with cancelledAt null (the cancel did not take effect)', () => {
    expect(decideFill(order('CANCELLED', '3', '300'), false, fill('7', '100', cancelledAt))).toMatchObject({
      outcome: 'APPLIED',
      next: { status: 'FILLED', filledQuantity: d('10'), cancelledAt: null },
    });
  });

  it('late fill: a REPLACED order stays REPLACED, even filled to its whole quantity', () => {
    expect(decideFill(order('REPLACED', '3', '300'), false, fill('7', '100', replacedAt))).toMatchObject({
      outcome: 'APPLIED',
      next: { status: 'REPLACED', filledQuantity: d('10'), replacedAt },
    });
  });

  it.each<OrderStatus>(['SUBMITTED', 'PARTIALLY_FILLED'])('fill: beyond the remaining quantity of a %s order is EXCEEDS_REMAINING', (status) => {
    const filled = status === 'SUBMITTED' ? '0' : '9.5';
    expect(decideFill(order(status, filled), false, fill(status === 'SUBMITTED' ? '10.0000000001' : '0.6'))).toEqual({
      outcome: 'EXCEEDS_REMAINING',
    });
  });

  it('fill: an already applied fill is ALREADY_APPLIED whatever the order has become since', () => {
    for (const status of statuses) {
      expect(decideFill(order(status), true, fill('100', '1', at(replacedAt, 60_000)))).toEqual({ outcome: 'ALREADY_APPLIED' });
    }
  });

  it("fill: no order (absent or another account's) is NOT_FOUND", () => {
    expect(decideFill(undefined, false, fill('1'))).toEqual({ outcome: 'NOT_FOUND' });
  });

  it('checkFill refuses a zero quantity or price', () => {
    expect(checkFill(fill('0'))).toBe('quantity must be greater than 0');
    expect(checkFill(fill('1', '0'))).toBe('price must be greater than 0');
    expect(checkFill(fill('1', '1'))).toBeUndefined();
  });
});

describe('validateReplacement', () => {
  const old = draft({ type: 'LIMIT', limitPrice: d('100'), clientOrderId: 'old-1', strategyId: uuid('0190F5A2-0000-7000-8000-0000000000AA') });

  it('inherits symbol, side, type and strategy, and defaults every input to the old value; never the clientOrderId', () => {
    expect(validateReplacement(old, {})).toEqual({ ok: true, value: { ...old, clientOrderId: null } });
    expect(validateReplacement(old, { quantity: d('4'), limitPrice: d('99.5'), timeInForce: 'GTC', clientOrderId: 'new-1' })).toEqual({
      ok: true,
      value: { ...old, quantity: d('4'), limitPrice: d('99.5'), timeInForce: 'GTC', clientOrderId: 'new-1' },
    });
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['a zero quantity', { quantity: d('0') }, 'quantity'],
    ['a stop price on a LIMIT order', { stopPrice: d('90') }, 'stopPrice'],
    ['a zero limit price', { limitPrice: d('0') }, 'limitPrice'],
    ['a malformed clientOrderId', { clientOrderId: 'not ok' }, 'clientOrderId'],
  ])("applies submitOrder's rules: %s is VALIDATION_FAILED on %s", (_case, input, field) => {
    expect(validateReplacement(old, input)).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED', field } });
  });
});

describe('derived figures', () => {
  it('remainingQuantity is quantity − filled while open, and 0 once cancelled, replaced or filled', () => {
    const of = (status: OrderStatus, filled: string) => formatDecimal(remainingQuantity({ status, quantity: d('10.5'), filledQuantity: d(filled) }));
    expect(of('SUBMITTED', '0')).toBe('10.5');
    expect(of('PARTIALLY_FILLED', '0.25')).toBe('10.25');
    expect(of('CANCELLED', '0.25')).toBe('0');
    expect(of('FILLED', '10.5')).toBe('0');
    expect(of('REPLACED', '3')).toBe('0');
  });

  it('averageFillPrice is null before the first fill, and the exact weighted mean rounded half-even to 10 places', () => {
    expect(averageFillPrice({ filledQuantity: d('0'), fillNotional: d('0') })).toBeNull();
    // 1 @ 10 and 2 @ 10.0000000001: 30.0000000002 / 3 = 10.0000000000666…
    expect(formatDecimal(averageFillPrice({ filledQuantity: d('3'), fillNotional: d('30.0000000002') })!)).toBe('10.0000000001');
    // Exactly halfway at the 11th place rounds to even: 0.00000000005 → 0, 0.00000000015 → 0.0000000002.
    expect(formatDecimal(averageFillPrice({ filledQuantity: d('2'), fillNotional: d('0.0000000001') })!)).toBe('0');
    expect(formatDecimal(averageFillPrice({ filledQuantity: d('2'), fillNotional: d('0.0000000003') })!)).toBe('0.0000000002');
    // Never a float: 0.1 + 0.2 style sums stay exact.
    expect(formatDecimal(averageFillPrice({ filledQuantity: d('3'), fillNotional: d('0.1').plus('0.2').times(3) })!)).toBe('0.3');
  });

  it('keeps 20 integer and 10 fraction digits exact through notional arithmetic', () => {
    const state = decideFill(
      { status: 'SUBMITTED', quantity: d('99999999999999999999.9999999999'), filledQuantity: d('0'), fillNotional: d('0'), cancelledAt: null, replacedAt: null },
      false,
      { quantity: d('99999999999999999999.9999999999'), price: d('99999999999999999999.9999999999'), executedAt: new Date() },
    );
    if (state.outcome !== 'APPLIED') throw new Error(state.outcome);
    expect(formatDecimal(state.next.fillNotional)).toBe('9999999999999999999999999999980000000000.00000000000000000001');
    expect(formatDecimal(averageFillPrice(state.next)!)).toBe('99999999999999999999.9999999999');
  });
});
