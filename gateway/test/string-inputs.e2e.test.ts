import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
} from 'graphql';
import { NO_RATE_LIMIT_ENV, useStack } from '../../testing/fixture.ts';
import { MULTILINE_INPUT_FIELDS } from '@ots/shared/string-inputs';
import { PUBLISHED_API_FILE } from '../src/compose.ts';

/**
 * Contract section 2 for every string input of every operation, found in the published API itself,
 * so that an operation added later is covered without touching this file: NUL and the other C0
 * control characters are refused, an input field with payload VALIDATION_FAILED naming the field,
 * a filter or argument with a top-level BAD_USER_INPUT naming it; never an internal error.
 */
const schema = buildSchema(readFileSync(PUBLISHED_API_FILE, 'utf8'));

/** One string somewhere in an operation's arguments: the field that takes it and the path to it. */
interface StringInput {
  /** Where the field hangs: a root type, or an entity reached through a root `x(id: ID!)` field. */
  owner: GraphQLObjectType;
  field: GraphQLField<unknown, unknown>;
  argument: GraphQLArgument;
  /** Input fields below the argument, e.g. ['symbol'] for filter.symbol. */
  path: string[];
  multiline: boolean;
}

function stringsIn(type: GraphQLInputType, path: string[], multiline: boolean, found: (path: string[], multiline: boolean) => void, depth = 0): void {
  const named = getNamedType(type);
  if (isScalarType(named) && (named.name === 'String' || named.name === 'ID')) found(path, multiline);
  if (isInputObjectType(named) && depth < 5) {
    for (const field of Object.values(named.getFields())) {
      stringsIn(field.type, [...path, field.name], MULTILINE_INPUT_FIELDS.has(`${named.name}.${field.name}`), found, depth + 1);
    }
  }
}

function stringInputs(): StringInput[] {
  const inputs: StringInput[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    // A subscription's arguments travel over the streams, not POST /graphql: this walk covers queries and mutations.
    if (!isObjectType(type) || type.name.startsWith('__') || type === schema.getSubscriptionType()) continue;
    for (const field of Object.values(type.getFields())) {
      for (const argument of field.args) {
        stringsIn(argument.type, [], false, (path, multiline) => inputs.push({ owner: type, field, argument, path, multiline }));
      }
    }
  }
  return inputs;
}

/** A value its type accepts; what it says does not matter, since the string rule runs before any resolver. */
function sample(type: GraphQLInputType): unknown {
  const nullable = getNullableType(type);
  if (isListType(nullable)) return [sample(nullable.ofType)];
  if (isInputObjectType(nullable)) {
    return Object.fromEntries(Object.values(nullable.getFields()).filter((field) => isNonNullType(field.type)).map((field) => [field.name, sample(field.type)]));
  }
  if (isEnumType(nullable)) return nullable.getValues()[0]!.value;
  switch (nullable.name) {
    case 'Int':
      return 1;
    case 'Float':
      return 1.5;
    case 'Boolean':
      return true;
    case 'Decimal':
      return '1';
    case 'DateTime':
      return new Date().toISOString();
    default:
      return 'x';
  }
}

/** `sample`, with `text` at `path`. */
function sampleWith(type: GraphQLInputType, path: string[], text: string): unknown {
  if (path.length === 0) return isListType(getNullableType(type)) ? [text] : text;
  const named = getNamedType(type);
  if (!isInputObjectType(named)) throw new Error(`no input field ${path.join('.')}`);
  const value = sample(named) as Record<string, unknown>;
  const [head, ...rest] = path;
  value[head!] = sampleWith(named.getFields()[head!]!.type, rest, text);
  return isListType(getNullableType(type)) ? [value] : value;
}

function selectionOf(field: GraphQLField<unknown, unknown>): string {
  const returned = getNamedType(field.type);
  if (!isObjectType(returned)) return '';
  return 'error' in returned.getFields() ? '{ __typename error { code field message } }' : '{ __typename }';
}

const ROOTS = new Set(['Query', 'Mutation']);
const t = useStack({ env: NO_RATE_LIMIT_ENV, accounts: ['client'] });
/** An object of each entity type, for the fields with arguments that entities carry (e.g. Strategy.orderSubmissions). */
const entityIds = new Map<string, string>();

/** The request that puts `text` into `input`, with every other required argument sampled. */
function requestFor(input: StringInput, text: string): { query: string; variables: Record<string, unknown>; rootKey: string } {
  const variables: Record<string, unknown> = {};
  const definitions: string[] = [];
  const argumentsText: string[] = [];
  for (const argument of input.field.args) {
    if (argument !== input.argument && !isNonNullType(argument.type)) continue;
    variables[argument.name] = argument === input.argument ? sampleWith(argument.type, input.path, text) : sample(argument.type);
    definitions.push(`$${argument.name}: ${String(argument.type)}`);
    argumentsText.push(`${argument.name}: $${argument.name}`);
  }
  const call = `${input.field.name}(${argumentsText.join(', ')}) ${selectionOf(input.field)}`;
  if (ROOTS.has(input.owner.name)) {
    return { query: `${input.owner.name === 'Mutation' ? 'mutation' : 'query'} (${definitions.join(', ')}) { ${call} }`, variables, rootKey: input.field.name };
  }
  // An entity's field: reached through the root query field that takes the entity's id.
  const lookup = Object.values(schema.getQueryType()!.getFields()).find(
    (field) => getNamedType(field.type) === input.owner && field.args.length === 1 && field.args[0]!.name === 'id',
  );
  const id = entityIds.get(input.owner.name);
  if (!lookup || !id) throw new Error(`add a fixture for ${input.owner.name} to test ${input.owner.name}.${input.field.name}`);
  variables.entityId = id;
  return { query: `query ($entityId: ID!, ${definitions.join(', ')}) { ${lookup.name}(id: $entityId) { ${call} } }`, variables, rootKey: lookup.name };
}

/** The type of the string input itself: the argument's, or that of the input field at its path. */
function leafType(input: StringInput): GraphQLInputType {
  let type: GraphQLInputType = input.argument.type;
  for (const name of input.path) {
    const named = getNamedType(type);
    if (!isInputObjectType(named)) throw new Error(`no input field ${input.path.join('.')}`);
    type = named.getFields()[name]!.type;
  }
  return type;
}

function describeInput(input: StringInput): string {
  return `${input.owner.name}.${input.field.name}(${[input.argument.name, ...input.path].join('.')})`;
}

beforeAll(async () => {
  const strategy = await t.client.createdStrategy('Probe');
  entityIds.set('Strategy', strategy.id);
  const order = await t.client.submittedOrder({ strategyId: strategy.id, symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '10' });
  entityIds.set('OrderSubmission', order.id);
  const recorded = await t.client.recordFill({ orderSubmissionId: order.id, executionId: 'E-1', quantity: '1', price: '100' });
  entityIds.set('Fill', recorded.fill!.id);
  const { endpoint } = await t.client.createdWebhookEndpoint({ url: 'http://127.0.0.1:9/hooks', eventTypes: [] });
  entityIds.set('WebhookEndpoint', endpoint.id);
});

describe('control characters in string inputs', () => {
  const inputs = stringInputs();

  it('the schema walk finds the inputs that once reached Postgres', () => {
    const found = inputs.map(describeInput);
    expect(found).toEqual(
      expect.arrayContaining([
        'Mutation.recordFill(input.executionId)',
        'Query.listOrderSubmissions(filter.symbol)',
        'Query.listOrderSubmissions(filter.clientOrderId)',
        'Query.listFills(filter.symbol)',
        'Strategy.orderSubmissions(filter.symbol)',
        'Mutation.createStrategy(input.description)',
        'Query.orderSubmission(id)',
      ]),
    );
  });

  // NUL, which Postgres refuses; ESC, which a terminal obeys; a line break outside a description;
  // a lone surrogate, which would be stored as U+FFFD.
  for (const [name, character] of [
    ['NUL', '\u0000'],
    ['ESC', '\u001B'],
    ['a line feed', '\n'],
    ['a lone surrogate', '\uD800'],
  ] as const) {
    it(`${name} is refused in every string input, as the contract says, never as an internal error`, async () => {
      const failures: string[] = [];
      for (const input of inputs) {
        if (input.multiline && character === '\n') continue;
        const { query, variables, rootKey } = requestFor(input, `AB${character}C`);
        const result = await t.client.graphql(query, variables);
        const where = describeInput(input);
        const payload = input.argument.name === 'input' && input.path.length > 0 && selectionOf(input.field).includes('error');
        if (payload) {
          const error = result.body.data?.[rootKey]?.error;
          if (result.body.errors || error?.code !== 'VALIDATION_FAILED' || error.field !== input.path.join('.')) {
            failures.push(`${where}: ${JSON.stringify(result.body)}`);
          }
        } else {
          // A string inside a list is named with its position, e.g. filter.types[0].
          const argumentName = [input.argument.name, ...input.path].join('.') + (isListType(getNullableType(leafType(input))) ? '[0]' : '');
          const [error] = result.body.errors ?? [];
          if (result.status !== 200 || error?.extensions?.code !== 'BAD_USER_INPUT' || error.extensions.argumentName !== argumentName || result.body.errors.length !== 1) {
            failures.push(`${where}: ${result.status} ${JSON.stringify(result.body)}`);
          }
        }
      }
      expect(failures).toEqual([]);
    });
  }

  it('names the offending value in a literal too, and in the message', async () => {
    const result = await t.client.graphql('{ listOrderSubmissions(filter: { symbol: "AA\\u0000PL" }) { nodes { id } } }');
    expect(result.body).toEqual({
      data: null,
      errors: [
        {
          message: 'filter.symbol must not contain control characters',
          path: ['listOrderSubmissions'],
          extensions: { code: 'BAD_USER_INPUT', argumentName: 'filter.symbol' },
        },
      ],
    });
    const fill = await t.client.data('mutation ($o: ID!) { recordFill(input: { orderSubmissionId: $o, executionId: "E-\\u0000", quantity: "1", price: "100" }) { fill { id } error { code field message } } }',
      { o: entityIds.get('OrderSubmission') },
    );
    expect(fill.recordFill).toEqual({
      fill: null,
      error: { code: 'VALIDATION_FAILED', field: 'executionId', message: 'executionId must not contain control characters' },
    });
  });

  it("a strategy's description alone keeps tab and line breaks; its name does not", async () => {
    const description = 'Mean reversion\n\tentry: z < -2\r\n\texit: z > 0';
    const created = await t.client.data('mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { description } error { code } } }', {
      input: { name: 'Multiline', description },
    });
    expect(created.createStrategy).toEqual({ strategy: { description }, error: null });
    const named = await t.client.data('mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { id } error { code field } } }', {
      input: { name: 'Tab\tname' },
    });
    expect(named.createStrategy).toEqual({ strategy: null, error: { code: 'VALIDATION_FAILED', field: 'name' } });
  });

  it('text without control characters passes untouched', async () => {
    const result = await t.client.data('query ($s: String) { listOrderSubmissions(filter: { symbol: $s }) { nodes { symbol } } }', { s: 'aapl' });
    expect(result.listOrderSubmissions.nodes).toEqual([{ symbol: 'AAPL' }]);
  });
});

describe('ill-formed Unicode', () => {
  const fill = (orderId: string, executionId: string) =>
    t.client.data('mutation ($input: RecordFillInput!) { recordFill(input: $input) { fill { executionId } error { code field message } } }', {
      input: { orderSubmissionId: orderId, executionId, quantity: '1', price: '100' },
    });
  const filledQuantity = async (orderId: string) =>
    (await t.client.data('query ($id: ID!) { orderSubmission(id: $id) { filledQuantity } }', { id: orderId })).orderSubmission.filledQuantity;

  it('three execution ids that differ only in lone surrogates are refused, never stored as one fill', async () => {
    const order = await t.client.submittedOrder({ symbol: 'MSFT', side: 'BUY', type: 'MARKET', quantity: '10' });
    for (const executionId of ['X-\uD800', 'X-\uDBFF', 'X-\uDC00']) {
      expect((await fill(order.id, executionId)).recordFill).toEqual({
        fill: null,
        error: { code: 'VALIDATION_FAILED', field: 'executionId', message: 'executionId must be well-formed Unicode (no unpaired surrogates)' },
      });
    }
    expect(await filledQuantity(order.id)).toBe('0');
    // A surrogate pair is one well-formed character.
    expect((await fill(order.id, 'X-\uD83D\uDE00')).recordFill).toEqual({ fill: { executionId: 'X-\u{1F600}' }, error: null });
    expect(await filledQuantity(order.id)).toBe('1');
  });

  it('a body that is not valid UTF-8 is refused with 400, not decoded into replacement characters', async () => {
    const order = await t.client.submittedOrder({ symbol: 'MSFT', side: 'BUY', type: 'MARKET', quantity: '10' });
    const query = 'mutation ($input: RecordFillInput!) { recordFill(input: $input) { fill { id } error { code } } }';
    // A stray continuation byte, a byte that never occurs in UTF-8, an encoded surrogate and an overlong NUL.
    for (const bytes of [[0x80], [0xff], [0xed, 0xa0, 0x80], [0xc0, 0x80]]) {
      const [before, after] = JSON.stringify({ query, variables: { input: { orderSubmissionId: order.id, executionId: 'Y-@', quantity: '1', price: '100' } } }).split('@');
      const body = Buffer.concat([Buffer.from(before!), Buffer.from(bytes), Buffer.from(after!)]);
      const response = await fetch(t.stack.gatewayUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': t.client.apiKey }, body });
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 400, body: { detail: 'Body is not valid UTF-8' } });
    }
    expect(await filledQuantity(order.id)).toBe('0');
  });
});
