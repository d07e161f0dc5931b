import { z } from 'zod';
import { parseUuid } from '../ids.ts';

/** The scalars the contracts are written in (contract section 2), as one service reads what another wrote. */

/** An id, read as the `Uuid` it names. */
export const wireUuid = z.string().transform((value, context) => {
  const parsed = parseUuid(value);
  if (parsed === undefined) {
    context.addIssue({ code: 'custom', message: 'must be a UUID' });
    return z.NEVER;
  }
  return parsed;
});

/** A Decimal: a non-negative decimal as a string. */
export const wireDecimal = z.string().regex(/^\d+(\.\d+)?$/);

/** A DateTime (ISO-8601), read as a Date. */
export const wireInstant = z.iso.datetime({ offset: true }).transform((value) => new Date(value));
