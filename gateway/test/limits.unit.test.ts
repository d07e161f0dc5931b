import { buildSchema, parse, validate, type GraphQLError, type ValidationRule } from 'graphql';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@ots/shared/config';
import { doublingFragments } from '@ots/shared/testing/doubling-fragments';
import { aliasLimit, costLimit, depthLimit } from '../src/limits.ts';

/** A small schema shaped like the supergraph's orders, strategies and fills. */
const schema = buildSchema(`
  type Query {
    listOrderSubmissions(first: Int = 50, after: String): OrderConnection!
    orderSubmission(id: ID!): Order
    strategy(id: ID!): Strategy
    node: Node
    viewer: Viewer!
  }
  type Mutation { createStrategy(name: String!): Strategy }
  type Viewer { id: ID! name: String }
  type Node { id: ID! child: Node }
  type OrderConnection { nodes: [Order!]! edges: [OrderEdge!]! pageInfo: PageInfo! }
  type OrderEdge { cursor: String! node: Order! }
  type PageInfo { hasNextPage: Boolean! endCursor: String }
  type Order {
    id: ID! clientOrderId: String symbol: String! side: String! type: String! status: String!
    quantity: String! limitPrice: String filledQuantity: String! averageFillPrice: String submittedAt: String! updatedAt: String!
    strategy: Strategy
    fills: [Fill!]!
  }
  type Strategy { id: ID! name: String! status: String! orderSubmissions(first: Int = 50): OrderConnection! }
  type Fill { id: ID! executionId: String! quantity: String! price: String! fee: String! executedAt: String! orderSubmission: Order! }
`);

const limits = loadConfig({}).limits;

function errorsOf(document: string, rule: ValidationRule): readonly GraphQLError[] {
  return validate(schema, parse(document), [rule]);
}

/** `{ node { child { ... { id } } } }` with `depth` fields on the longest path. */
function nested(depth: number): string {
  let inner = 'id';
  for (let i = 0; i < depth - 2; i += 1) inner = `child { ${inner} }`;
  return `{ node { ${inner} } }`;
}

describe('the default limits are those of contract section 8', () => {
  it('depth 10, 15 aliases, 2,000 tokens, 100 KiB bodies, 50/s with bursts of 100', () => {
    expect(limits).toMatchObject({ depth: 10, aliases: 15, tokens: 2000, bodyBytes: 100 * 1024, rateLimitPerSecond: 50, rateLimitBurst: 100 });
  });
});

describe('depthLimit', () => {
  it('accepts depth 10 and refuses depth 11', () => {
    expect(errorsOf(nested(10), depthLimit(10))).toEqual([]);
    const errors = errorsOf(nested(11), depthLimit(10));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/depth/i);
  });

  it('counts through named and inline fragments', () => {
    const viaFragments = `
      { node { ...A } }
      fragment A on Node { child { ... on Node { child { ...B } } } }
      fragment B on Node { child { child { child { child { child { child { id } } } } } } }
    `;
    // node, then 2 + 6 children through the fragments, then id: depth 10.
    expect(errorsOf(viaFragments, depthLimit(10))).toEqual([]);
    const deeper = viaFragments.replace('{ id }', '{ child { id } }');
    expect(errorsOf(deeper, depthLimit(10))).toHaveLength(1);
  });

  it('a wide but shallow query is fine', () => {
    const wide = `{ ${Array.from({ length: 40 }, () => 'viewer { id name }').join(' ')} }`;
    expect(errorsOf(wide, depthLimit(10))).toEqual([]);
  });

  // Fragments that spread the next one twice, level upon level: 2^levels paths, one fragment each level.
  it.each([30, 190])('measures %i levels of fragments spreading the next twice in moments, through them as through one', (levels) => {
    const started = performance.now();
    const shallow = doublingFragments({ levels, on: 'Node', innermost: 'child { id }', root: '{ node { ...F0 } }' });
    expect(errorsOf(shallow, depthLimit(10))).toEqual([]);
    // node, then 9 children and id: depth 11.
    const deep = doublingFragments({ levels, on: 'Node', innermost: `${'child { '.repeat(9)}id${' }'.repeat(9)}`, root: '{ node { ...F0 } }' });
    const errors = errorsOf(deep, depthLimit(10));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/depth/i);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  // A fragment cycle is refused by graphql's own NoFragmentCycles rule, which runs alongside these
  // rules: they must not crash on it meanwhile (a crash turns the client's 400 into a server error).
  it('does not loop on a fragment cycle', () => {
    const cyclic = '{ node { ...A } } fragment A on Node { child { ...A } }';
    expect(() => errorsOf(cyclic, depthLimit(10))).not.toThrow();
  });
});

describe('aliasLimit', () => {
  const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: viewer { id }`).join(' ')} }`;

  it('accepts 15 aliases and refuses 16', () => {
    expect(errorsOf(aliased(15), aliasLimit(15))).toEqual([]);
    const errors = errorsOf(aliased(16), aliasLimit(15));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/16 aliases/);
  });

  it('counts aliases on nested fields and inside fragments', () => {
    const nestedAliases = `{ viewer { ${Array.from({ length: 10 }, (_, i) => `n${i}: name`).join(' ')} } ...F }
      fragment F on Query { ${Array.from({ length: 6 }, (_, i) => `f${i}: viewer { id }`).join(' ')} }`;
    expect(errorsOf(nestedAliases, aliasLimit(15))).toHaveLength(1);
  });

  it('counts a fragment once per spread, as the response holds its aliases, and walks each fragment once', () => {
    const fragment = `fragment F on OrderSubmission { ${Array.from({ length: 6 }, (_, i) => `f${i}: id`).join(' ')} }`;
    const spreadOnce = `{ orderSubmission(id: "x") { ...F } }\n${fragment}`;
    const spreadThrice = `{ orderSubmission(id: "x") { ...F replacedBy { ...F replacedBy { ...F } } } }\n${fragment}`;
    expect(errorsOf(spreadOnce, aliasLimit(15))).toEqual([]);
    expect(errorsOf(spreadThrice, aliasLimit(15)).map((error) => error.message)).toEqual(['The document uses 18 aliases; the limit is 15']);
    // Forty levels of fragments, each spreading the next twice: counted without walking 2^40 paths.
    const levels = Array.from({ length: 40 }, (_, level) =>
      level === 39 ? 'fragment L39 on OrderSubmission { a: id }' : `fragment L${level} on OrderSubmission { ...L${level + 1} replacedBy { ...L${level + 1} } }`,
    ).join('\n');
    const started = performance.now();
    expect(errorsOf(`{ orderSubmission(id: "x") { ...L0 } }\n${levels}`, aliasLimit(15))).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('costLimit', () => {
  const ORDER_FIELDS = 'id clientOrderId symbol side type status quantity limitPrice filledQuantity averageFillPrice submittedAt updatedAt';
  const FULL_PAGE = `listOrderSubmissions(first: 200) {
    nodes { ${ORDER_FIELDS} strategy { id name status } fills { id executionId quantity price fee executedAt } }
    pageInfo { hasNextPage endCursor }
  }`;

  it('listOrderSubmissions(first: 200) with strategy and fills fits under the default LIMIT_COST', () => {
    expect(errorsOf(`{ ${FULL_PAGE} }`, costLimit(limits.cost))).toEqual([]);
  });

  it('the Relay form, edges with cursors and node plus pageInfo, fits too', () => {
    const relay = `{ listOrderSubmissions(first: 200) { edges { cursor node { ${ORDER_FIELDS} strategy { id name } fills { id price } } } pageInfo { hasNextPage endCursor } } }`;
    expect(errorsOf(relay, costLimit(limits.cost))).toEqual([]);
  });

  it('two such pages in one document do not fit', () => {
    expect(errorsOf(`{ a: ${FULL_PAGE} b: ${FULL_PAGE} }`, costLimit(limits.cost))).toHaveLength(1);
  });

  it('the same through edges and fragments fits too', () => {
    const viaEdges = `{ listOrderSubmissions(first: 200) { edges { cursor node { ...O } } } }
      fragment O on Order { ${ORDER_FIELDS} strategy { id name } fills { id price } }`;
    expect(errorsOf(viaEdges, costLimit(limits.cost))).toEqual([]);
  });

  it('the default page (50) of a strategy page inside each order of a 50-order page is refused', () => {
    const pagesOfPages = '{ listOrderSubmissions { nodes { strategy { orderSubmissions { nodes { id } } } } } }';
    const errors = errorsOf(pagesOfPages, costLimit(limits.cost));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/cost/i);
  });

  it('a page size out of range counts as the largest page: a negative first beside pages of pages does not bring them under the limit', () => {
    const pagesOfPages = 'y: listOrderSubmissions(first: 200) { nodes { strategy { orderSubmissions(first: 200) { nodes { id } } } } }';
    for (const size of ['-99999999', '0', '100000']) {
      expect(errorsOf(`{ x: listOrderSubmissions(first: ${size}) { nodes { id } } ${pagesOfPages} }`, costLimit(limits.cost)), size).toHaveLength(1);
    }
    expect(errorsOf('{ listOrderSubmissions(first: -5) { nodes { id } } }', costLimit(limits.cost))).toEqual([]);
  });

  it('a page of 200 pages of 200 is refused', () => {
    const pagesOfPages = '{ listOrderSubmissions(first: 200) { nodes { strategy { orderSubmissions(first: 200) { nodes { id } } } } } }';
    expect(errorsOf(pagesOfPages, costLimit(limits.cost))).toHaveLength(1);
  });

  it('fills of the orders of a strategy page inside an order page is refused', () => {
    const doc = '{ listOrderSubmissions(first: 100) { nodes { fills { orderSubmission { strategy { orderSubmissions(first: 20) { nodes { id } } } } } } } }';
    expect(errorsOf(doc, costLimit(limits.cost))).toHaveLength(1);
  });

  it('a page size given by a variable is costed as the largest page', () => {
    const doc = 'query ($n: Int) { listOrderSubmissions(first: $n) { nodes { strategy { orderSubmissions(first: $n) { nodes { id } } } } } }';
    expect(errorsOf(doc, costLimit(limits.cost))).toHaveLength(1);
  });

  it('many full pages in one document are refused, one is not', () => {
    const many = `{ ${Array.from({ length: 5 }, (_, i) => `p${i}: ${FULL_PAGE}`).join(' ')} }`;
    expect(errorsOf(many, costLimit(limits.cost))).toHaveLength(1);
  });

  it('mutations are costed too', () => {
    expect(errorsOf('mutation { createStrategy(name: "x") { id orderSubmissions(first: 200) { nodes { id } } } }', costLimit(limits.cost))).toEqual([]);
    expect(errorsOf('mutation { createStrategy(name: "x") { orderSubmissions(first: 200) { nodes { strategy { orderSubmissions(first: 200) { nodes { id } } } } } } }', costLimit(limits.cost))).toHaveLength(1);
  });

  // Each spread still counts: the cost is that of the expanded document, 2^levels viewers, found in moments.
  it.each([30, 190])('costs %i levels of fragments spreading the next twice as 2^levels selections, in moments', (levels) => {
    const started = performance.now();
    const errors = errorsOf(doublingFragments({ levels, on: 'Query', innermost: 'viewer { id }' }), costLimit(limits.cost));
    expect(errors.map((error) => error.message)).toEqual([`Query cost ${2 ** levels} exceeds the limit of ${limits.cost}`]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('costs a fragment by the page it is spread in, each time', () => {
    const fragment = 'fragment P on OrderConnection { nodes { strategy { orderSubmissions(first: 200) { nodes { id } } } } }';
    // One order's strategy page: 1 + (1 + 1 × (1 + 1 + 1 + (1 + 200))) = 206.
    expect(errorsOf(`{ listOrderSubmissions(first: 1) { ...P } } ${fragment}`, costLimit(limits.cost))).toEqual([]);
    // The same fragment in a page of 200 orders: 1 + (1 + 200 × 204) = 40,802 more.
    const both = `{ one: listOrderSubmissions(first: 1) { ...P } many: listOrderSubmissions(first: 200) { ...P } } ${fragment}`;
    expect(errorsOf(both, costLimit(limits.cost)).map((error) => error.message)).toEqual([`Query cost ${206 + 40_802} exceeds the limit of ${limits.cost}`]);
  });

  it('does not loop on a fragment cycle', () => {
    const cyclic = '{ listOrderSubmissions { nodes { ...A } } } fragment A on Order { strategy { orderSubmissions { nodes { ...A } } } }';
    expect(() => errorsOf(cyclic, costLimit(limits.cost))).not.toThrow();
  });

  it('small everyday queries cost little', () => {
    expect(errorsOf('{ viewer { id name } orderSubmission(id: "1") { id strategy { id } fills { id } } }', costLimit(10))).toEqual([]);
  });
});
