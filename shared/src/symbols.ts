/**
 * Symbols as they are stored: 1–16 of A–Z, 0–9, `.`, `/` and `-`, upper-cased on input. The
 * characters are checked before upper-casing: toUpperCase maps some non-ASCII letters into A–Z
 * (ß → SS, ı → I, ﬁ → FI), so a value no one could submit would otherwise name a stored symbol.
 */
export const SYMBOL_CHARACTERS = /^[A-Za-z0-9./-]+$/;
export const SYMBOL_MAX_LENGTH = 16;

/**
 * The stored spelling of a symbol a filter names, or undefined when no stored symbol is spelt so
 * (a filter on it matches nothing: `filter: {symbol: "ﬁ"}` must not cancel every FI order).
 */
export function storedSymbolOf(value: string): string | undefined {
  return value.length <= SYMBOL_MAX_LENGTH && SYMBOL_CHARACTERS.test(value) ? value.toUpperCase() : undefined;
}
