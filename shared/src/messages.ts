/**
 * The wording of payload error messages that more than one subgraph gives, so that one rule reads
 * the same whichever service applies it. Each returns the whole message; the caller picks the code
 * and the `field` (the input field or argument the error is about, see the services' READMEs).
 */

/** Amounts that must be positive (quantity, prices). */
export function mustBeGreaterThanZero(field: string): string {
  return `${field} must be greater than 0`;
}

/** A length range, in characters (code points, as Postgres counts them); `qualifier` e.g. "after trimming". */
export function mustBeLengthBetween(field: string, min: number, max: number, actual: number, qualifier?: string): string {
  return `${field} must be ${min} to ${max} characters long${qualifier ? ` ${qualifier}` : ''}, got ${actual}`;
}

export function mustBeLengthAtMost(field: string, max: number, actual: number): string {
  return `${field} must be at most ${max} characters long, got ${actual}`;
}

/** NOT_FOUND: absent and another account's read the same (contract section 4). */
export function notFoundInAccount(thing: string, id: string): string {
  return `No ${thing} "${id}" exists in this account`;
}

/** An idempotency key (clientOrderId, executionId) reused for something that is not a retry. */
export function idempotencyKeyReused(field: string, value: string, thing: string): string {
  return `${field} "${value}" is already used by ${thing} with different details; a retry must repeat them exactly`;
}

/** A state conflict: the object named by `field` is in a state the operation does not accept. */
export function wrongState(thing: string, id: string, status: string, rule: string): string {
  return `${thing} ${id} is ${status}; ${rule}`;
}

/** Code points, the unit of every length rule (Postgres' char_length counts the same). */
export function characterCount(text: string): number {
  return [...text].length;
}
