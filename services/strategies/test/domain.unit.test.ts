import { describe, expect, it } from 'vitest';
import {
  decideEdit,
  decideTransition,
  nameKey,
  normalizeName,
  STRATEGY_STATUSES,
  validateChanges,
  validateDescription,
  validateNewStrategy,
  type StatusAction,
  type StrategyStatus,
} from '../src/domain.ts';
import { nameKeyV1 } from '../migrations/002_name_key.ts';

const ID = '0190f5a2-0000-7000-8000-00000000000a';

describe('strategy names', () => {
  it('trims surrounding white space and keeps inner spacing and case', () => {
    expect(normalizeName('  Mean  Reversion\t')).toEqual({ ok: true, value: 'Mean  Reversion' });
  });

  it('accepts 1 and 100 characters, refuses 0 (after trimming) and 101', () => {
    expect(normalizeName('x')).toEqual({ ok: true, value: 'x' });
    expect(normalizeName('n'.repeat(100))).toEqual({ ok: true, value: 'n'.repeat(100) });
    for (const name of ['', '   ', '\n\t', 'n'.repeat(101), ` ${'n'.repeat(101)} `]) {
      expect(normalizeName(name)).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED', field: 'name' } });
    }
  });

  it('counts characters, not UTF-16 units: 100 emoji fit, 101 do not', () => {
    expect(normalizeName('📈'.repeat(100)).ok).toBe(true);
    expect(normalizeName('📈'.repeat(101)).ok).toBe(false);
  });

  it('stores the composed Unicode form, so visually identical names are one name', () => {
    const decomposed = 'Cafe\u0301';
    const result = normalizeName(decomposed);
    expect(result).toEqual({ ok: true, value: 'Café' });
  });

  it('refuses control characters and lone surrogates', () => {
    for (const name of ['a\u0000b', 'line\nbreak', 'bell\u0007', 'half\ud800']) {
      expect(normalizeName(name)).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED', field: 'name' } });
    }
  });
});

describe('name keys (what the uniqueness rule compares)', () => {
  it('folds case in the application, the same for any database locale, non-ASCII letters included', () => {
    const sameName: string[][] = [
      ['Mean Reversion', 'MEAN REVERSION', 'mean reversion'],
      ['ÉMILE', 'émile', 'Émile', 'E\u0301MILE'],
      ['ДЕЛЬТА', 'дельта', 'Дельта'],
      ['ΟΔΟΣ', 'οδος', 'Οδος'],
      ['ǅemal', 'ǄEMAL', 'ǆemal'],
      ['Straße', 'STRAẞE', 'straße'],
      ['İstanbul', 'i\u0307stanbul'],
    ];
    for (const names of sameName) {
      expect(new Set(names.map(nameKey)).size, names.join(' / ')).toBe(1);
    }
  });

  it('keeps different letters apart', () => {
    for (const [a, b] of [
      ['Emile', 'Émile'],
      ['I', 'İ'],
      ['i', 'ı'],
      // Unicode full case folding would join these; lower-casing does not (see nameKey).
      ['STRASSE', 'Straße'],
      ['Strategy 1', 'Strategy 2'],
    ]) {
      expect(nameKey(a!), `${a} / ${b}`).not.toBe(nameKey(b!));
    }
  });

  it('is the function migration 002 backfilled with', () => {
    for (const name of ['ÉMILE', 'Straße', 'ΟΔΟΣ', 'İstanbul', 'Cafe\u0301', '📈 Momentum', 'ǅ', 'ﬁ', 'ŉ']) {
      expect(nameKeyV1(name)).toBe(nameKey(name));
    }
  });
});

describe('strategy descriptions', () => {
  it('keeps a description as written, null included', () => {
    expect(validateDescription('  Buys dips.\n\tSells rips.  ')).toEqual({ ok: true, value: '  Buys dips.\n\tSells rips.  ' });
    expect(validateDescription(null)).toEqual({ ok: true, value: null });
  });

  it('accepts 2,000 characters and refuses 2,001', () => {
    expect(validateDescription('d'.repeat(2000)).ok).toBe(true);
    expect(validateDescription('d'.repeat(2001))).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED', field: 'description' } });
  });

  it('refuses NUL and other control characters that are not line breaks or tabs', () => {
    for (const description of ['a\u0000b', 'esc\u001b[0m']) {
      expect(validateDescription(description)).toMatchObject({ ok: false, error: { field: 'description' } });
    }
  });
});

describe('creating a strategy', () => {
  it('normalizes the name and defaults the description to null', () => {
    expect(validateNewStrategy({ name: ' Momentum ' })).toEqual({ ok: true, value: { name: 'Momentum', description: null } });
  });

  it('reports the first field at fault', () => {
    expect(validateNewStrategy({ name: '', description: 'd'.repeat(2001) })).toMatchObject({ ok: false, error: { field: 'name' } });
  });
});

describe('updating a strategy', () => {
  const active = { id: ID, name: 'Momentum', description: 'old', status: 'ACTIVE' as const };

  it('keeps absent fields, clears the description on null, refuses a null name', () => {
    expect(validateChanges({})).toEqual({ ok: true, value: {} });
    expect(validateChanges({ description: null })).toEqual({ ok: true, value: { description: null } });
    expect(validateChanges({ name: '  Carry ' })).toEqual({ ok: true, value: { name: 'Carry' } });
    expect(validateChanges({ name: null })).toMatchObject({ ok: false, error: { code: 'VALIDATION_FAILED', field: 'name' } });
  });

  it('validates new values like creation does', () => {
    expect(validateChanges({ description: 'd'.repeat(2001) })).toMatchObject({ ok: false, error: { field: 'description' } });
  });

  it('writes only what differs, and nothing when nothing differs', () => {
    expect(decideEdit(active, { name: 'Momentum', description: 'old' })).toEqual({ kind: 'unchanged' });
    expect(decideEdit(active, {})).toEqual({ kind: 'unchanged' });
    expect(decideEdit(active, { name: 'momentum', description: 'old' })).toEqual({ kind: 'change', changes: { name: 'momentum' } });
    expect(decideEdit(active, { description: null })).toEqual({ kind: 'change', changes: { description: null } });
  });

  it('allows editing a paused strategy and refuses any edit of an archived one', () => {
    expect(decideEdit({ ...active, status: 'PAUSED' }, { name: 'Carry' }).kind).toBe('change');
    for (const changes of [{ name: 'Carry' }, {}]) {
      expect(decideEdit({ ...active, status: 'ARCHIVED' }, changes)).toMatchObject({
        kind: 'refused',
        error: {
          code: 'INVALID_STATUS_TRANSITION',
          field: 'id',
          message: `Strategy ${ID} is ARCHIVED; an archived strategy cannot be edited: archiving is final`,
        },
      });
    }
  });
});

describe('status transitions', () => {
  // Every (state, action) pair: ACTIVE ⇄ PAUSED, either → ARCHIVED (final), repeating the current state is a no-op.
  const expected: Record<StrategyStatus, Record<StatusAction, StrategyStatus | 'unchanged' | 'refused'>> = {
    ACTIVE: { pause: 'PAUSED', resume: 'unchanged', archive: 'ARCHIVED' },
    PAUSED: { pause: 'unchanged', resume: 'ACTIVE', archive: 'ARCHIVED' },
    ARCHIVED: { pause: 'refused', resume: 'refused', archive: 'unchanged' },
  };

  for (const from of STRATEGY_STATUSES) {
    for (const action of ['pause', 'resume', 'archive'] as const) {
      const outcome = expected[from][action];
      it(`${action} from ${from}: ${outcome}`, () => {
        const decision = decideTransition(from, action, ID);
        if (outcome === 'unchanged') expect(decision).toEqual({ kind: 'unchanged' });
        else if (outcome === 'refused') {
          expect(decision).toMatchObject({
            kind: 'refused',
            // A state conflict names the id of the strategy in the wrong state.
            error: { code: 'INVALID_STATUS_TRANSITION', field: 'id', message: `Strategy ${ID} is ${from}; a strategy that is archived cannot be ${action}d` },
          });
        } else expect(decision).toEqual({ kind: 'change', to: outcome });
      });
    }
  }
});
