/**
 * A document whose every fragment spreads the next one twice, `levels` deep: a walk that expands each
 * spread where it stands visits `innermost` 2^levels times. About 10 tokens a level, so near 190
 * levels fit the default limit of 2,000 tokens. `root` is the operation, spreading `...F0`.
 */
export function doublingFragments({ levels, on, innermost, root = '{ ...F0 }' }: { levels: number; on: string; innermost: string; root?: string }): string {
  const fragments = Array.from({ length: levels }, (_, level) => `fragment F${level} on ${on} { ...F${level + 1} ...F${level + 1} }`);
  return `${root} ${fragments.join(' ')} fragment F${levels} on ${on} { ${innermost} }`;
}
