import { readFileSync } from 'node:fs';
import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { composeSupergraph, PUBLISHED_API_FILE, subgraphSdl } from '../src/compose.ts';
import { keyAllows, refusedFields, rootFieldScopes, scopeRules } from '../src/scopes.ts';
import { SUPERGRAPH_PATH } from '../src/server.ts';
import { CONTRACT_ROOT_FIELD_SCOPES, INTERNAL_ROOT_FIELD_SCOPES } from '../../testing/contract-scopes.ts';

const supergraph = readFileSync(SUPERGRAPH_PATH, 'utf8');
const rules = scopeRules(supergraph);
const { required } = rules;

function refusals(query: string, scopes: string[]) {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
  return refusedFields(rules, document, operation, new Set(scopes));
}

/** `Type.field` of every root field of the published API. */
function publishedRootFields(): string[] {
  const published = buildSchema(readFileSync(PUBLISHED_API_FILE, 'utf8'));
  return [published.getQueryType(), published.getMutationType(), published.getSubscriptionType()].flatMap((type) =>
    type ? Object.keys(type.getFields()).map((field) => `${type.name}.${field}`) : [],
  );
}

describe('every root field declares its scope (contract section 5)', () => {
  it("the published API's root fields are exactly those of the contract's scope table", () => {
    expect(publishedRootFields().sort()).toEqual(Object.keys(CONTRACT_ROOT_FIELD_SCOPES).sort());
  });

  it("the committed supergraph declares on every root field the scope the contract's table assigns it", () => {
    expect(rootFieldScopes(supergraph).undeclared).toEqual([]);
    const asDeclared = (scope: string | null) => (scope === null ? [[]] : [[scope]]);
    const expected = Object.fromEntries(
      Object.entries({ ...CONTRACT_ROOT_FIELD_SCOPES, ...INTERNAL_ROOT_FIELD_SCOPES }).map(([field, scope]) => [field, asDeclared(scope)]),
    );
    expect(Object.fromEntries(required)).toEqual(expected);
  });

  it('the build fails when a new query, mutation or subscription declares no scope', () => {
    const withUnprotected = (name: string) => {
      const sdl = subgraphSdl(name as 'orders');
      return name === 'orders'
        ? `${sdl}\nextend type Query { orderCount: Int }\nextend type Mutation { purgeOrders: Int }\ntype Subscription { orderChanged: ID }\n`
        : sdl;
    };
    expect(() => composeSupergraph(withUnprotected)).toThrow(/@requiresScopes/);
    for (const field of ['Query.orderCount', 'Mutation.purgeOrders', 'Subscription.orderChanged']) {
      expect(() => composeSupergraph(withUnprotected)).toThrow(`- ${field}`);
    }
  });

  it('a subscription that declares its scope composes', () => {
    const withSubscription = (name: string) => {
      const sdl = subgraphSdl(name as 'orders');
      return name === 'orders' ? `${sdl}\ntype Subscription { orderChanged: ID @requiresScopes(scopes: [["read"]]) }\n` : sdl;
    };
    const { supergraphSdl } = composeSupergraph(withSubscription);
    expect(rootFieldScopes(supergraphSdl).required.get('Subscription.orderChanged')).toEqual([['read']]);
  });
});

describe('the gateway\'s check of an operation', () => {
  it('one FORBIDDEN error per refused root field, by response key, naming the scope', () => {
    expect(refusals('mutation { a: submitOrder(input: {}) { error { code } } recordFill(input: {}) { error { code } } }', ['read'])).toEqual([
      { message: 'This API key lacks the scope orders:write', path: ['a'], extensions: { code: 'FORBIDDEN', requiredScope: 'orders:write' } },
      { message: 'This API key lacks the scope fills:write', path: ['recordFill'], extensions: { code: 'FORBIDDEN', requiredScope: 'fills:write' } },
    ]);
  });

  it('viewer and introspection need no scope; fragments at the root are seen', () => {
    expect(refusals('{ viewer { account { id } } __typename __schema { queryType { name } } }', ['fills:write'])).toEqual([]);
    expect(refusals('query { ...F } fragment F on Query { listFills { nodes { id } } }', ['fills:write'])).toEqual([
      expect.objectContaining({ path: ['listFills'], extensions: { code: 'FORBIDDEN', requiredScope: 'read' } }),
    ]);
  });

  it("a mutation's payload is no way round read: a strategy's orders and positions below it are refused by their paths", () => {
    const writeOnly = ['orders:write', 'fills:write', 'strategies:write'];
    const nested = (path: string[]) => ({ message: 'This API key lacks the scope read', path, extensions: { code: 'FORBIDDEN', requiredScope: 'read' } });
    expect(
      refusals(
        `mutation {
          submitOrder(input: {}) { orderSubmission { id strategy { name orderSubmissions { nodes { id } } } } }
          r: recordFill(input: {}) { fill { id } orderSubmission { strategy { ... on Strategy { held: positions { symbol } } } } }
          createStrategy(input: {}) { strategy { ...Book } }
        }
        fragment Book on Strategy { id orderSubmissions(first: 200) { nodes { fills { price } } } }`,
        writeOnly,
      ),
    ).toEqual([
      nested(['submitOrder', 'orderSubmission', 'strategy', 'orderSubmissions']),
      nested(['r', 'orderSubmission', 'strategy', 'held']),
      nested(['createStrategy', 'strategy', 'orderSubmissions']),
    ]);
    // What the write itself made or changed stays readable: the order, its strategy's name, its fills.
    expect(refusals('mutation { recordFill(input: {}) { fill { id } orderSubmission { fills { id } strategy { name } } } }', writeOnly)).toEqual([]);
    expect(refusals('mutation { submitOrder(input: {}) { orderSubmission { strategy { orderSubmissions { nodes { id } } } } } }', ['read', 'orders:write'])).toEqual([]);
    // A refused root field is refused once, not again for what lies below it.
    expect(refusals('mutation { submitOrder(input: {}) { orderSubmission { strategy { positions { symbol } } } } }', ['fills:write'])).toEqual([
      expect.objectContaining({ path: ['submitOrder'], extensions: { code: 'FORBIDDEN', requiredScope: 'orders:write' } }),
    ]);
  });

  it('walks fragments that spread each other twice over, level upon level, once each', () => {
    const levels = 40;
    const document = (bottom: string) =>
      'mutation { submitOrder(input: {}) { orderSubmission { ...F0 } } }\n' +
      Array.from({ length: levels }, (_, level) =>
        level === levels - 1 ? `fragment F${level} on OrderSubmission { ${bottom} }` : `fragment F${level} on OrderSubmission { ...F${level + 1} replacedBy { ...F${level + 1} } }`,
      ).join('\n');
    // Nothing refused: the walk goes over the whole document, 2^40 paths, each fragment once.
    const started = performance.now();
    expect(refusals(document('id strategy { name }'), ['orders:write'])).toEqual([]);
    expect(refusals(document('id strategy { positions { symbol } }'), ['orders:write'])).toEqual([
      expect.objectContaining({ path: ['submitOrder', 'orderSubmission', 'strategy', 'positions'], extensions: { code: 'FORBIDDEN', requiredScope: 'read' } }),
    ]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('keyAllows answers for one field, for the event streams', () => {
    expect(keyAllows(['read'], 'Query.listEvents')).toBe(true);
    expect(keyAllows(['orders:write'], 'Query.listEvents')).toBe(false);
    expect(keyAllows(['read'], 'Subscription.nothingDeclared')).toBe(false);
    expect(keyAllows(['read'], 'Subscription.events', new Map([['Subscription.events', [['read']]]]))).toBe(true);
  });
});
