import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { doublingFragments } from '@ots/shared/testing/doubling-fragments';
import { rootFieldsOf, selectedOperation } from '../src/root-fields.ts';

const rootKeys = (query: string, operationName?: string) => {
  const document = parse(query);
  return rootFieldsOf(document, selectedOperation(document, operationName));
};

describe('the root fields of a document', () => {
  it('names plain fields by alias or name, in document order', () => {
    expect(rootKeys('{ viewer { id } mine: listStrategies { totalCount } }')).toEqual([
      { key: 'viewer', name: 'viewer' },
      { key: 'mine', name: 'listStrategies' },
    ]);
  });

  it('reaches fields through a fragment spread on the root type, and through fragments inside it', () => {
    const query = `
      query Q { ...Top viewer { id } }
      fragment Top on Query { a: strategy(id: "x") { id } ...Deeper }
      fragment Deeper on Query { listOrderSubmissions { totalCount } }`;
    expect(rootKeys(query).map(({ key }) => key)).toEqual(['a', 'listOrderSubmissions', 'viewer']);
  });

  it('reaches fields through inline fragments, with and without a type condition', () => {
    const query = '{ ... on Query { viewer { id } } ... { b: viewer { id } } ... @include(if: true) { c: strategy(id: "x") { id } } }';
    expect(rootKeys(query)).toEqual([
      { key: 'viewer', name: 'viewer' },
      { key: 'b', name: 'viewer' },
      { key: 'c', name: 'strategy' },
    ]);
  });

  it('lists a response key once, however often it is selected', () => {
    expect(rootKeys('query { viewer { id } ...V ... { viewer { email } } } fragment V on Query { viewer { id } }')).toEqual([
      { key: 'viewer', name: 'viewer' },
    ]);
  });

  it('ends at a fragment cycle and skips a spread of a missing fragment', () => {
    const query = '{ ...A ...Missing } fragment A on Query { viewer { id } ...B } fragment B on Query { x: viewer { id } ...A }';
    expect(rootKeys(query).map(({ key }) => key)).toEqual(['viewer', 'x']);
  });

  // This runs before authentication: one request must not hold the event loop for 2^levels expansions.
  it.each([30, 190])('expands each fragment once, however often it is spread: %i levels of fragments spreading the next twice take moments', (levels) => {
    const started = performance.now();
    const query = doublingFragments({ levels, on: 'Query', innermost: 'viewer { id } s: strategy(id: "x") { id }' });
    expect(rootKeys(query)).toEqual([
      { key: 'viewer', name: 'viewer' },
      { key: 's', name: 'strategy' },
    ]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('uses the operation chosen by operationName, and its own fragments', () => {
    const query = 'query One { viewer { id } } mutation Two { ...M } fragment M on Mutation { createStrategy(input: {}) { id } }';
    expect(rootKeys(query, 'Two')).toEqual([{ key: 'createStrategy', name: 'createStrategy' }]);
    expect(rootKeys(query, 'One')).toEqual([{ key: 'viewer', name: 'viewer' }]);
  });

  it('refuses an unknown operation name, or several operations without one', () => {
    const query = 'query One { viewer { id } } query Two { b: viewer { id } }';
    expect(() => rootKeys(query, 'Three')).toThrow('Unknown operation named "Three".');
    expect(() => rootKeys(query)).toThrow('Must provide operation name if query contains multiple operations.');
  });
});
