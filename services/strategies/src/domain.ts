import { fail, ok, payloadError, type PayloadError, type Result } from '@ots/shared/errors';
import { characterCount, mustBeLengthAtMost, mustBeLengthBetween, wrongState } from '@ots/shared/messages';

export type StrategyStatus = 'ACTIVE' | 'PAUSED' | 'ARCHIVED';
export const STRATEGY_STATUSES: readonly StrategyStatus[] = ['ACTIVE', 'PAUSED', 'ARCHIVED'];

const MAX_NAME_LENGTH = 100;
const MAX_DESCRIPTION_LENGTH = 2000;

// Control characters in a name are invisible in every list that shows it; lone surrogates cannot be
// stored as UTF-8 without being silently replaced.
const NAME_FORBIDDEN = /[\p{Cc}\p{Cs}]/u;
// A description may span lines; NUL cannot be stored in Postgres text at all.
// eslint-disable-next-line no-control-regex -- matching control characters is what it is for
const DESCRIPTION_FORBIDDEN = /[\p{Cs}\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/u;

/**
 * The stored form of a name: trimmed, and in Unicode NFC so that two spellings a person cannot tell
 * apart are one name for the uniqueness rule.
 */
export function normalizeName(raw: string): Result<string> {
  const name = raw.trim().normalize('NFC');
  const length = characterCount(name);
  if (length < 1 || length > MAX_NAME_LENGTH) {
    return fail('VALIDATION_FAILED', mustBeLengthBetween('name', 1, MAX_NAME_LENGTH, length, 'after trimming'), 'name');
  }
  if (NAME_FORBIDDEN.test(name)) return fail('VALIDATION_FAILED', 'name must not contain control characters or unpaired surrogates', 'name');
  return ok(name);
}

/**
 * What the uniqueness rule compares (column `name_key`, migration 002): the stored name lower-cased in
 * the application, so that the rule does not depend on the database's collation or ctype (under a
 * C/POSIX locale Postgres' lower() leaves "É" as it is). JavaScript's toLowerCase applies the Unicode
 * default case mapping whatever the locale: "ÉMILE"/"émile", "ДЕЛЬТА"/"дельта", "ǄEMAL"/"ǅemal",
 * "ẞ"/"ß" are one name each.
 *
 * Deliberately not upper-then-lower (an approximation of full case folding that would also make
 * "STRASSE" and "Straße" one name): it folds the Turkish dotless "ı" into "i", two different letters,
 * and still keys "ẞ" and "ß" apart ("ß" upper-cases to "SS", "ẞ" to itself). Names that differ only
 * as "ss"/"ß" therefore remain two names.
 *
 * Changing this function changes which names collide: it needs a migration that recomputes
 * name_key for every row (migration 002 holds its own frozen copy, which a unit test compares).
 */
export function nameKey(name: string): string {
  return name.normalize('NFC').toLowerCase().normalize('NFC');
}

/** Descriptions are kept as written (line breaks and indentation may matter), within the limit. */
export function validateDescription(description: string | null): Result<string | null> {
  if (description === null) return ok(null);
  const length = characterCount(description);
  if (length > MAX_DESCRIPTION_LENGTH) {
    return fail('VALIDATION_FAILED', mustBeLengthAtMost('description', MAX_DESCRIPTION_LENGTH, length), 'description');
  }
  if (DESCRIPTION_FORBIDDEN.test(description)) {
    return fail('VALIDATION_FAILED', 'description must not contain control characters other than tab and line breaks, nor unpaired surrogates', 'description');
  }
  return ok(description);
}

export interface NewStrategy {
  name: string;
  description: string | null;
}

export function validateNewStrategy(input: { name: string; description?: string | null }): Result<NewStrategy> {
  const name = normalizeName(input.name);
  if (!name.ok) return name;
  const description = validateDescription(input.description ?? null);
  if (!description.ok) return description;
  return ok({ name: name.value, description: description.value });
}

/** An update names only what changes: an absent key is left alone, description null clears it. */
export interface StrategyChanges {
  name?: string;
  description?: string | null;
}

export function validateChanges(input: { name?: string | null; description?: string | null }): Result<StrategyChanges> {
  const changes: StrategyChanges = {};
  if (input.name !== undefined) {
    if (input.name === null) {
      return fail('VALIDATION_FAILED', 'name cannot be cleared; leave it out to keep the current name', 'name');
    }
    const name = normalizeName(input.name);
    if (!name.ok) return name;
    changes.name = name.value;
  }
  if (input.description !== undefined) {
    const description = validateDescription(input.description);
    if (!description.ok) return description;
    changes.description = description.value;
  }
  return ok(changes);
}

export interface EditableStrategy {
  id: string;
  name: string;
  description: string | null;
  status: StrategyStatus;
}

export type EditDecision = { kind: 'unchanged' } | { kind: 'change'; changes: StrategyChanges } | { kind: 'refused'; error: PayloadError };

/**
 * Archived is final, so an archived strategy is read-only; otherwise only the fields that really
 * differ are written, and an edit that changes nothing leaves the strategy (and its updatedAt) alone.
 */
export function decideEdit(current: EditableStrategy, changes: StrategyChanges): EditDecision {
  if (current.status === 'ARCHIVED') {
    return {
      kind: 'refused',
      error: payloadError(
        'INVALID_STATUS_TRANSITION',
        wrongState('Strategy', current.id, current.status, 'an archived strategy cannot be edited: archiving is final'),
        'id',
      ),
    };
  }
  const effective: StrategyChanges = {};
  if (changes.name !== undefined && changes.name !== current.name) effective.name = changes.name;
  if (changes.description !== undefined && changes.description !== current.description) effective.description = changes.description;
  return Object.keys(effective).length === 0 ? { kind: 'unchanged' } : { kind: 'change', changes: effective };
}

export type StatusAction = 'pause' | 'resume' | 'archive';

const TARGET: Record<StatusAction, StrategyStatus> = { pause: 'PAUSED', resume: 'ACTIVE', archive: 'ARCHIVED' };

/** ACTIVE ⇄ PAUSED, either → ARCHIVED; nothing leaves ARCHIVED. */
const ALLOWED_FROM: Record<StatusAction, readonly StrategyStatus[]> = {
  pause: ['ACTIVE'],
  resume: ['PAUSED'],
  archive: ['ACTIVE', 'PAUSED'],
};

export type TransitionDecision =
  | { kind: 'unchanged' }
  | { kind: 'change'; to: StrategyStatus }
  | { kind: 'refused'; error: PayloadError };

/**
 * Asking for the state the strategy is already in is a no-op, not an error. `id` is the strategy's,
 * which a refusal names (its `field` is the `id` argument).
 */
export function decideTransition(current: StrategyStatus, action: StatusAction, id: string): TransitionDecision {
  const to = TARGET[action];
  if (current === to) return { kind: 'unchanged' };
  if (ALLOWED_FROM[action].includes(current)) return { kind: 'change', to };
  return {
    kind: 'refused',
    error: payloadError(
      'INVALID_STATUS_TRANSITION',
      wrongState('Strategy', id, current, `a strategy that is ${current.toLowerCase()} cannot be ${pastTense(action)}`),
      'id',
    ),
  };
}

function pastTense(action: StatusAction): string {
  return { pause: 'paused', resume: 'resumed', archive: 'archived' }[action];
}

export function nameTakenMessage(name: string): string {
  return `The name "${name}" is already used by another strategy that is not archived (names are compared regardless of case)`;
}
