import { describe, expect, it } from 'vitest';
import { Decimal } from '@ots/shared/decimal';
import { receiveId } from '@ots/shared/ids';
import {
  duplicateExecutionId,
  isSameFill,
  settlementOf,
  validateRecordFill,
  type RecordFillInput,
} from '../src/domain.ts';

const NOW = Date.parse('2026-11-21T14:00:00.000Z');
const ORDER_ID = '0193a000-0000-7000-8000-000000000001';

function input(overrides: Partial<RecordFillInput> = {}): RecordFillInput {
  return { orderSubmissionId: receiveId(ORDER_ID), executionId: 'exec-1', quantity: new Decimal('2'), price: new Decimal('100.5'), ...overrides };
}

function errorOf(result: ReturnType<typeof validateRecordFill>) {
  return result.ok ? undefined : { code: result.error.code, field: result.error.field };
}

describe('validateRecordFill', () => {
  it('applies the defaults: fee 0, liquidity UNKNOWN, executedAt left to the receipt time', () => {
    const result = validateRecordFill(input(), NOW);
    expect(result.ok && { fee: result.value.fee.toString(), liquidity: result.value.liquidity, executedAt: result.value.executedAt }).toEqual({
      fee: '0',
      liquidity: 'UNKNOWN',
      executedAt: null,
    });
  });

  it('refuses a zero quantity or price, naming the field, in the words orders uses for the same rule', () => {
    expect(validateRecordFill(input({ quantity: new Decimal(0) }), NOW)).toEqual({
      ok: false,
      error: { code: 'VALIDATION_FAILED', field: 'quantity', message: 'quantity must be greater than 0' },
    });
    expect(validateRecordFill(input({ price: new Decimal('0.0') }), NOW)).toEqual({
      ok: false,
      error: { code: 'VALIDATION_FAILED', field: 'price', message: 'price must be greater than 0' },
    });
    expect(validateRecordFill(input({ executionId: 'x'.repeat(129) }), NOW)).toMatchObject({
      error: { message: 'executionId must be 1 to 128 characters long, got 129' },
    });
  });

  it('accepts a zero fee', () => {
    expect(validateRecordFill(input({ fee: new Decimal(0) }), NOW).ok).toBe(true);
  });

  it('takes execution ids of 1 to 128 characters, counting characters rather than UTF-16 units', () => {
    expect(errorOf(validateRecordFill(input({ executionId: '' }), NOW))).toEqual({ code: 'VALIDATION_FAILED', field: 'executionId' });
    expect(validateRecordFill(input({ executionId: 'x' }), NOW).ok).toBe(true);
    expect(validateRecordFill(input({ executionId: 'x'.repeat(128) }), NOW).ok).toBe(true);
    expect(validateRecordFill(input({ executionId: '😀'.repeat(128) }), NOW).ok).toBe(true);
    expect(errorOf(validateRecordFill(input({ executionId: 'x'.repeat(129) }), NOW))).toEqual({ code: 'VALIDATION_FAILED', field: 'executionId' });
  });

  it('allows executedAt up to 5 s ahead of the server clock and refuses it beyond', () => {
    expect(validateRecordFill(input({ executedAt: new Date(NOW + 5_000) }), NOW).ok).toBe(true);
    expect(errorOf(validateRecordFill(input({ executedAt: new Date(NOW + 5_001) }), NOW))).toEqual({
      code: 'VALIDATION_FAILED',
      field: 'executedAt',
    });
    expect(validateRecordFill(input({ executedAt: new Date('2001-01-01T00:00:00.000Z') }), NOW).ok).toBe(true);
  });

  it('spells an upper-case order id the way Postgres stores it, keeping the text sent for messages', () => {
    const result = validateRecordFill(input({ orderSubmissionId: receiveId(ORDER_ID.toUpperCase()) }), NOW);
    expect(result.ok && result.value.orderSubmissionId).toEqual({ uuid: ORDER_ID, sent: ORDER_ID.toUpperCase() });
  });
});

describe('isSameFill', () => {
  const recorded = {
    orderSubmissionId: ORDER_ID,
    quantity: '2',
    price: '100.5',
    fee: '0',
    liquidity: 'UNKNOWN' as const,
    executedAt: new Date('2026-11-21T13:59:59.120Z'),
  };
  const terms = (overrides: Partial<RecordFillInput>) => {
    const result = validateRecordFill(input(overrides), NOW);
    if (!result.ok) throw new Error('test input must be valid');
    return result.value;
  };

  it('matches a retry with the same details, amounts compared as numbers', () => {
    expect(isSameFill(recorded, terms({ quantity: new Decimal('2.000'), price: new Decimal('100.50'), executedAt: recorded.executedAt }))).toBe(true);
    expect(isSameFill(recorded, terms({ orderSubmissionId: receiveId(ORDER_ID.toUpperCase()) }))).toBe(true);
  });

  it('matches a retry that leaves out executedAt, whatever time was recorded', () => {
    expect(isSameFill(recorded, terms({}))).toBe(true);
  });

  it('tells apart any differing detail', () => {
    expect(isSameFill(recorded, terms({ quantity: new Decimal('2.0000000001') }))).toBe(false);
    expect(isSameFill(recorded, terms({ price: new Decimal('100.4') }))).toBe(false);
    expect(isSameFill(recorded, terms({ fee: new Decimal('0.01') }))).toBe(false);
    expect(isSameFill(recorded, terms({ liquidity: 'MAKER' }))).toBe(false);
    expect(isSameFill(recorded, terms({ executedAt: new Date(recorded.executedAt.getTime() + 1) }))).toBe(false);
    expect(isSameFill(recorded, terms({ orderSubmissionId: receiveId('0193a000-0000-7000-8000-000000000002') }))).toBe(false);
    expect(isSameFill(recorded, terms({ orderSubmissionId: receiveId('not-a-uuid') }))).toBe(false);
  });
});

describe('settlementOf (the orders verdict)', () => {
  const fill = { orderSubmissionId: ORDER_ID, quantity: '3' };

  it('counts a first and a repeated application alike', () => {
    expect(settlementOf('APPLIED', fill, null)).toEqual({ kind: 'applied' });
    expect(settlementOf('ALREADY_APPLIED', fill, null)).toEqual({ kind: 'applied' });
  });

  it('maps each refusal to its contract code', () => {
    const codeOf = (settlement: ReturnType<typeof settlementOf>) => (settlement.kind === 'refused' ? settlement.error.code : 'applied');
    expect(codeOf(settlementOf('NOT_FOUND', fill, null))).toBe('NOT_FOUND');
    expect(codeOf(settlementOf('NOT_FILLABLE', fill, { status: 'CANCELLED', quantity: '10', filledQuantity: '4' }))).toBe('ORDER_NOT_FILLABLE');
    expect(codeOf(settlementOf('EXCEEDS_REMAINING', fill, { status: 'PARTIALLY_FILLED', quantity: '10', filledQuantity: '8' }))).toBe(
      'FILL_EXCEEDS_REMAINING',
    );
  });

  it('names the field each refusal is about', () => {
    const errorOf = (settlement: ReturnType<typeof settlementOf>) =>
      settlement.kind === 'refused' ? { code: settlement.error.code, field: settlement.error.field } : undefined;
    expect(errorOf(settlementOf('NOT_FOUND', fill, null))).toEqual({ code: 'NOT_FOUND', field: 'orderSubmissionId' });
    expect(errorOf(settlementOf('NOT_FILLABLE', fill, { status: 'FILLED', quantity: '10', filledQuantity: '10' }))).toEqual({
      code: 'ORDER_NOT_FILLABLE',
      field: 'orderSubmissionId',
    });
    expect(errorOf(settlementOf('EXCEEDS_REMAINING', fill, { status: 'SUBMITTED', quantity: '2', filledQuantity: '0' }))).toEqual({
      code: 'FILL_EXCEEDS_REMAINING',
      field: 'quantity',
    });
    expect(duplicateExecutionId('exec-1')).toMatchObject({ code: 'DUPLICATE_EXECUTION_ID', field: 'executionId' });
  });

  it('says what a cancelled order can still take for a late fill, not its remainingQuantity of 0', () => {
    const settlement = settlementOf('EXCEEDS_REMAINING', { ...fill, quantity: '7' }, { status: 'CANCELLED', quantity: '10', filledQuantity: '4' });
    expect(settlement.kind === 'refused' && settlement.error.message).toBe('quantity 7 exceeds what the order has left to fill, 6');
  });
});
