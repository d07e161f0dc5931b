import { buildSchema, GraphQLError, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { refusal } from '@ots/shared/testing/refusal';
import { checkScalarInputs } from '../src/scalar-check.ts';

// As in the supergraph, the gateway knows the custom scalars by name only.
const schema = buildSchema(`
  scalar Decimal
  scalar DateTime
  input OrderInput { symbol: String!, quantity: Decimal!, limitPrice: Decimal }
  input Filter { after: DateTime, window: [DateTime!], prices: [Decimal] }
  type Query { list(filter: Filter, first: Int): [String] at(when: DateTime!): String }
  type Mutation { submit(input: OrderInput!): String submitMany(inputs: [OrderInput!]!): String }
`);

function check(query: string, variables?: Record<string, unknown>): void {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  checkScalarInputs(schema, document, operation, variables);
}

function queryRefusal(query: string, variables?: Record<string, unknown>): GraphQLError {
  return refusal(() => check(query, variables));
}

describe('checkScalarInputs: Decimal and DateTime values checked at the gateway', () => {
  it('lets good values through, inline and as variables, and nulls where allowed', () => {
    expect(() => check('mutation { submit(input: { symbol: "A", quantity: "10.5", limitPrice: null }) }')).not.toThrow();
    expect(() => check('mutation ($i: OrderInput!) { submit(input: $i) }', { i: { symbol: 'A', quantity: '1', limitPrice: '187.25' } })).not.toThrow();
    expect(() => check('{ list(filter: { after: "2026-11-21T14:03:07.120Z", window: ["2026-11-21T14:03:07Z"], prices: ["1", null] }) }')).not.toThrow();
    expect(() => check('query ($f: Filter) { list(filter: $f) }', {})).not.toThrow();
  });

  it('refuses a Decimal number literal, naming the input field', () => {
    const error = queryRefusal('mutation { submit(input: { symbol: "A", quantity: 10 }) }');
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'input.quantity' });
  });

  it('refuses a Decimal sent as a JSON number in a variable, naming the variable path', () => {
    const error = queryRefusal('mutation ($i: OrderInput!) { submit(input: $i) }', { i: { symbol: 'A', quantity: 10 } });
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: '$i.quantity' });
  });

  it('refuses a bad value inside a list of input objects', () => {
    const inline = queryRefusal('mutation { submitMany(inputs: [{ symbol: "A", quantity: "1" }, { symbol: "B", quantity: "-1" }]) }');
    expect(inline.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'inputs[1].quantity' });
    const variable = queryRefusal('mutation ($l: [OrderInput!]!) { submitMany(inputs: $l) }', {
      l: [{ symbol: 'A', quantity: '1' }, { symbol: 'B', quantity: '1e5' }],
    });
    expect(variable.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: '$l[1].quantity' });
  });

  it('refuses a malformed DateTime, inline, in a list, and as a variable', () => {
    expect(queryRefusal('{ at(when: "2026-02-30T00:00:00Z") }').extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'when' });
    expect(queryRefusal('{ list(filter: { window: ["2026-11-21T14:03:07Z", "yesterday"] }) }').extensions).toMatchObject({ argumentName: 'filter.window[1]' });
    expect(queryRefusal('query ($w: DateTime!) { at(when: $w) }', { w: '2026-11-21T14:03:07' }).extensions).toMatchObject({ argumentName: '$w' });
  });

  it("refuses a variable's default value as it refuses a literal, when the request leaves the variable out", () => {
    expect(queryRefusal('mutation ($q: Decimal! = 1) { submit(input: { symbol: "A", quantity: $q }) }').extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: '$q' });
    expect(queryRefusal('mutation ($q: Decimal! = "1e3") { submit(input: { symbol: "A", quantity: $q }) }').extensions).toMatchObject({ argumentName: '$q' });
    expect(queryRefusal('query ($d: DateTime = "nope") { list(filter: { after: $d }) }').extensions).toMatchObject({ argumentName: '$d' });
    expect(queryRefusal('query ($f: Filter = { after: "nope" }) { list(filter: $f) }').extensions).toMatchObject({ argumentName: '$f.after' });
    expect(() => check('mutation ($q: Decimal! = "2") { submit(input: { symbol: "A", quantity: $q }) }')).not.toThrow();
  });

  it('the message says what is wrong without echoing anything but the value', () => {
    const error = queryRefusal('mutation { submit(input: { symbol: "A", quantity: "12.345678901234" }) }');
    expect(error.message).toMatch(/input\.quantity/);
    expect(error.message).toMatch(/fraction digits/);
  });

  it('checks the variables of every request, and refuses a bad literal every time, when the parsed document is reused', () => {
    const document = parse('mutation ($i: OrderInput!) { submit(input: $i) }');
    const operation = document.definitions[0] as OperationDefinitionNode;
    expect(() => checkScalarInputs(schema, document, operation, { i: { symbol: 'A', quantity: '1' } })).not.toThrow();
    expect(() => checkScalarInputs(schema, document, operation, { i: { symbol: 'A', quantity: 1 } })).toThrow(/\$i\.quantity/);
    expect(() => checkScalarInputs(schema, document, operation, { i: { symbol: 'A', quantity: '2' } })).not.toThrow();

    const bad = parse('mutation { submit(input: { symbol: "A", quantity: "-1" }) }');
    const badOperation = bad.definitions[0] as OperationDefinitionNode;
    const first = refusal(() => checkScalarInputs(schema, bad, badOperation, undefined));
    const second = refusal(() => checkScalarInputs(schema, bad, badOperation, undefined));
    expect(second).not.toBe(first);
    expect([first.message, first.extensions]).toEqual([second.message, second.extensions]);
    expect(second.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'input.quantity' });
  });
});
