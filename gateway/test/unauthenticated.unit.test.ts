import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { doublingFragments } from '@ots/shared/testing/doubling-fragments';
import { refusal } from '@ots/shared/testing/refusal';
import { AUTHENTICATION_REQUIRED, variantABody } from '../src/unauthenticated.ts';

const paths = (body: ReturnType<typeof variantABody>) => body.errors.map((error) => error.path);

describe('variantABody (contract section 5, Variant A)', () => {
  it('gives data null and one UNAUTHENTICATED error per root field', () => {
    expect(variantABody('{ viewer { account { id } } listOrderSubmissions { nodes { id } } }', undefined, 2000)).toEqual({
      data: null,
      errors: [
        { message: AUTHENTICATION_REQUIRED, path: ['viewer'], extensions: { code: 'UNAUTHENTICATED' } },
        { message: AUTHENTICATION_REQUIRED, path: ['listOrderSubmissions'], extensions: { code: 'UNAUTHENTICATED' } },
      ],
    });
    expect(AUTHENTICATION_REQUIRED).toBe('Authentication required');
  });

  it('uses the response key: an alias replaces the field name', () => {
    const body = variantABody('query { me: viewer { account { id } } orders: listOrderSubmissions(first: 5) { nodes { id } } viewer { apiKey { id } } }', undefined, 2000);
    expect(paths(body)).toEqual([['me'], ['orders'], ['viewer']]);
  });

  it('expands named fragments and inline fragments at the root', () => {
    const body = variantABody(
      `query { ...Roots ... on Query { s: strategy(id: "1") { id } } ... { listFills { nodes { id } } } }
       fragment Roots on Query { viewer { account { id } } ...More }
       fragment More on Query { fill(id: "2") { id } }`,
      undefined,
      2000,
    );
    expect(paths(body)).toEqual([['viewer'], ['fill'], ['s'], ['listFills']]);
  });

  it('a response key selected twice gives one error', () => {
    const body = variantABody('{ viewer { account { id } } viewer { apiKey { id } } ...F } fragment F on Query { viewer { account { name } } }', undefined, 2000);
    expect(paths(body)).toEqual([['viewer']]);
  });

  it('answers for the operation named by operationName', () => {
    const document = 'query A { viewer { account { id } } } query B { listStrategies { nodes { id } } x: fill(id: "1") { id } } mutation C { createStrategy(input: { name: "n" }) { strategy { id } } }';
    expect(paths(variantABody(document, 'B', 2000))).toEqual([['listStrategies'], ['x']]);
    expect(paths(variantABody(document, 'A', 2000))).toEqual([['viewer']]);
    expect(paths(variantABody(document, 'C', 2000))).toEqual([['createStrategy']]);
  });

  it('is given for fields the schema does not have: the document is not validated', () => {
    const body = variantABody('{ adminSecrets { password } users(all: true) { email } }', undefined, 2000);
    expect(paths(body)).toEqual([['adminSecrets'], ['users']]);
    expect(JSON.stringify(body)).not.toMatch(/Cannot query|Did you mean|Unknown/);
  });

  it('mutations get one error per root field, like queries', () => {
    const body = variantABody('mutation { a: pauseStrategy(id: "1") { strategy { id } } b: resumeStrategy(id: "1") { strategy { id } } }', undefined, 2000);
    expect(paths(body)).toEqual([['a'], ['b']]);
  });

  it('throws the GraphQL syntax error for a document that does not parse', () => {
    expect(() => variantABody('{ viewer { account { id } ', undefined, 2000)).toThrow(GraphQLError);
    expect(() => variantABody('{ viewer { account { id } ', undefined, 2000)).toThrow(/Syntax Error/);
    expect(() => variantABody('not graphql at all', undefined, 2000)).toThrow(/Syntax Error/);
  });

  it('answers at once for fragments that spread the next one twice, as deep as 2,000 tokens allow', () => {
    const started = performance.now();
    const body = variantABody(doublingFragments({ levels: 190, on: 'Query', innermost: 'viewer { account { id } }' }), undefined, 2000);
    expect(paths(body)).toEqual([['viewer']]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('throws when the document is over the token limit', () => {
    const long = `{ viewer { account { ${'id '.repeat(300)} } } }`;
    expect(() => variantABody(long, undefined, 100)).toThrow(/tokens/);
    expect(() => variantABody(long, undefined, 2000)).not.toThrow();
  });

  it('throws BAD_REQUEST when the operation to run cannot be chosen', () => {
    const two = 'query A { viewer { account { id } } } query B { viewer { apiKey { id } } }';
    for (const run of [() => variantABody(two, undefined, 2000), () => variantABody(two, 'Z', 2000), () => variantABody('fragment F on Query { viewer { account { id } } }', undefined, 2000)]) {
      expect(refusal(run).extensions.code).toBe('BAD_REQUEST');
    }
  });
});
