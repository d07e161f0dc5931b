import { readFileSync } from 'node:fs';
import {
  buildSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { createKey, updateKey } from '@ots/accounts';
import { eventFeedRoute } from '@ots/shared/event-feed';
import { API_KEY_SCOPES } from '@ots/shared/scopes';
import { PUBLISHED_API_FILE } from '../src/compose.ts';
import { CONTRACT_ROOT_FIELD_SCOPES } from '../../testing/contract-scopes.ts';
import { NO_RATE_LIMIT_ENV, useStack } from '../../testing/fixture.ts';

/**
 * Contract section 5, "Scopes and allowed addresses": every root field of the published schema,
 * asked with a key of each single scope, generated from the published schema so that a new field is
 * covered without writing a test, and held to the contract's scope table (not to the supergraph's
 * declarations, which are what the gateway enforces).
 */
const t = useStack({ accounts: ['alice'], env: NO_RATE_LIMIT_ENV });

const published = buildSchema(readFileSync(PUBLISHED_API_FILE, 'utf8'));
const ZERO_ID = '00000000-0000-7000-8000-000000000000';

/** A literal the field's argument accepts: the smallest value of its type, every required input field filled. */
function literal(type: GraphQLInputType): string {
  if (isNonNullType(type)) return literal(type.ofType);
  if (isListType(type)) return `[${literal(type.ofType)}]`;
  if (isEnumType(type)) return type.getValues()[0]!.name;
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields()).filter((field) => isNonNullType(field.type) && field.defaultValue === undefined);
    return `{${fields.map((field) => `${field.name}: ${literal(field.type)}`).join(', ')}}`;
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'ID':
        return JSON.stringify(ZERO_ID);
      case 'Int':
        return '1';
      case 'Boolean':
        return 'true';
      case 'Decimal':
        return '"1"';
      case 'DateTime':
        return '"2026-01-01T00:00:00.000Z"';
      case 'String':
        return '"https://127.0.0.1/hook"';
      default:
        throw new Error(`no literal for scalar ${type.name}: add one here`);
    }
  }
  throw new Error(`no literal for ${String(type)}`);
}

function documentFor(kind: 'query' | 'mutation', field: GraphQLField<unknown, unknown>): string {
  const args = field.args.filter((arg) => isNonNullType(arg.type) && arg.defaultValue === undefined);
  const argumentText = args.length > 0 ? `(${args.map((arg) => `${arg.name}: ${literal(arg.type)}`).join(', ')})` : '';
  const selection = isLeafType(getNamedType(field.type)) ? '' : ' { __typename }';
  return `${kind} { ${field.name}${argumentText}${selection} }`;
}

const rootFields = [
  ...Object.values(published.getQueryType()!.getFields()).map((field) => ({ kind: 'query' as const, type: 'Query', field })),
  ...Object.values(published.getMutationType()!.getFields()).map((field) => ({ kind: 'mutation' as const, type: 'Mutation', field })),
];

describe('every root field against a key of every scope', () => {
  it("every query and mutation of the published schema has a row in the contract's scope table", () => {
    for (const { type, field } of rootFields) expect(Object.hasOwn(CONTRACT_ROOT_FIELD_SCOPES, `${type}.${field.name}`), `${type}.${field.name}`).toBe(true);
    expect(rootFields.length).toBeGreaterThan(20);
  });

  it.each(API_KEY_SCOPES.map((scope) => [scope]))('a key holding only %s', async (scope) => {
    const account = await t.newAccount(`Only ${scope}`);
    const { apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, scopes: [scope] });
    for (const { kind, type, field } of rootFields) {
      const requiredScope = CONTRACT_ROOT_FIELD_SCOPES[`${type}.${field.name}`];
      const allowed = requiredScope === null || requiredScope === scope;
      const result = await t.stack.graphql(apiKey, documentFor(kind, field));
      const what = `${type}.${field.name} with ${scope}: ${JSON.stringify(result.body)}`;
      if (allowed) {
        expect(result.status, what).toBe(200);
        expect(result.body.errors?.filter((error: { extensions?: { code?: string } }) => error.extensions?.code === 'FORBIDDEN') ?? [], what).toEqual([]);
      } else {
        expect({ status: result.status, body: result.body }, what).toEqual({
          status: 200,
          body: {
            data: null,
            errors: [{ message: `This API key lacks the scope ${requiredScope}`, path: [field.name], extensions: { code: 'FORBIDDEN', requiredScope } }],
          },
        });
      }
    }
  });
});

describe('an operation with a root field outside the key\'s scopes runs nothing', () => {
  it('one error per refused field by its response key; the allowed field did not run either', async () => {
    const account = await t.newAccount('Mixed');
    const { apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, scopes: ['orders:write'] });
    const result = await t.stack.graphql(
      apiKey,
      `mutation {
        placed: submitOrder(input: { symbol: "AAPL", side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id } }
        made: createStrategy(input: { name: "Never" }) { strategy { id } }
        fill: recordFill(input: { orderSubmissionId: "${ZERO_ID}", executionId: "x", quantity: "1", price: "1" }) { fill { id } }
      }`,
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      data: null,
      errors: [
        { message: 'This API key lacks the scope strategies:write', path: ['made'], extensions: { code: 'FORBIDDEN', requiredScope: 'strategies:write' } },
        { message: 'This API key lacks the scope fills:write', path: ['fill'], extensions: { code: 'FORBIDDEN', requiredScope: 'fills:write' } },
      ],
    });
    const everything = await account.graphql('{ listOrderSubmissions { nodes { id } } listStrategies { nodes { id } } }');
    expect(everything.body.data).toEqual({ listOrderSubmissions: { nodes: [] }, listStrategies: { nodes: [] } });
  });

  it('is refused FORBIDDEN, not BAD_USER_INPUT, when a value of the refused field is malformed too: the scopes are checked before anything else', async () => {
    const account = await t.newAccount('Read only');
    const { apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, scopes: ['read'] });
    const result = await t.stack.graphql(
      apiKey,
      'mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } } }',
      { input: { symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: 1 } },
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      data: null,
      errors: [{ message: 'This API key lacks the scope orders:write', path: ['submitOrder'], extensions: { code: 'FORBIDDEN', requiredScope: 'orders:write' } }],
    });
  });

  it('a key that only places orders may still name a strategy on an order (strategies answers it as an entity)', async () => {
    const account = await t.newAccount('Trader');
    const strategy = await account.graphql('mutation { createStrategy(input: { name: "Momentum" }) { strategy { id } } }');
    const strategyId = strategy.body.data.createStrategy.strategy.id as string;
    const { apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, scopes: ['orders:write'] });
    const placed = await t.stack.graphql(
      apiKey,
      `mutation { submitOrder(input: { strategyId: "${strategyId}", symbol: "AAPL", side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id strategy { name } } error { code } } }`,
    );
    expect(placed.body.errors).toBeUndefined();
    expect(placed.body.data.submitOrder).toEqual({ orderSubmission: { id: expect.any(String), strategy: { name: 'Momentum' } }, error: null });
  });
});

describe("a mutation's payload is no way round read", () => {
  it("a key that only places orders lists no strategy's orders or positions through the payload, and the order is not placed", async () => {
    const account = await t.newAccount('Write only');
    const strategy = await account.graphql('mutation { createStrategy(input: { name: "Book" }) { strategy { id } } }');
    const strategyId = strategy.body.data.createStrategy.strategy.id as string;
    await account.submittedOrder({ strategyId });
    const { apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, scopes: ['orders:write'] });
    const result = await t.stack.graphql(
      apiKey,
      `mutation { submitOrder(input: { strategyId: "${strategyId}", symbol: "MSFT", side: BUY, type: MARKET, quantity: "1" }) {
        orderSubmission { id strategy { name book: orderSubmissions(first: 200) { nodes { id symbol } } } } } }`,
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      data: null,
      errors: [
        {
          message: 'This API key lacks the scope read',
          path: ['submitOrder', 'orderSubmission', 'strategy', 'book'],
          extensions: { code: 'FORBIDDEN', requiredScope: 'read' },
        },
      ],
    });
    const orders = await account.graphql('{ listOrderSubmissions { nodes { symbol } } }');
    expect(orders.body.data.listOrderSubmissions.nodes).toEqual([{ symbol: expect.not.stringMatching('MSFT') }]);
  });

  it('orders and fills refuse the field to an assertion without read, as the gateway resolves it (an entity of a strategy)', async () => {
    const account = await t.newAccount('Direct entity');
    const strategy = await account.graphql('mutation { createStrategy(input: { name: "Book" }) { strategy { id } } }');
    const strategyId = strategy.body.data.createStrategy.strategy.id as string;
    const entities = (field: string) => ({
      query: `query ($representations: [_Any!]!) { _entities(representations: $representations) { ... on Strategy { ${field} } } }`,
      variables: { representations: [{ __typename: 'Strategy', id: strategyId }] },
    });
    const orders = entities('orderSubmissions { nodes { id } }');
    const positions = entities('positions { symbol }');
    for (const [url, body] of [[t.stack.urls.orders, orders], [t.stack.urls.fills, positions]] as const) {
      const refused = await account.postToSubgraph(url, body, ['orders:write', 'fills:write']);
      expect(refused.body.errors).toEqual([expect.objectContaining({ extensions: { code: 'FORBIDDEN', requiredScope: 'read' } })]);
      const allowed = await account.postToSubgraph(url, body, ['read']);
      expect(allowed.body.errors).toBeUndefined();
    }
  });
});

describe('subgraphs check the scopes again from the assertion', () => {
  it('an assertion of a read-only key sent straight to orders places no order', async () => {
    const account = await t.newAccount('Direct');
    const body = { query: 'mutation { submitOrder(input: { symbol: "AAPL", side: BUY, type: MARKET, quantity: "1" }) { orderSubmission { id } } }' };
    const refused = await account.postToSubgraph(t.stack.urls.orders, body, ['read']);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: ['submitOrder'], extensions: { code: 'FORBIDDEN', requiredScope: 'orders:write' } })]);
    const read = await account.postToSubgraph(t.stack.urls.orders, { query: '{ listOrderSubmissions { nodes { id } } }' }, ['read']);
    expect(read.body.data).toEqual({ listOrderSubmissions: { nodes: [] } });
    expect((await account.postToSubgraph(t.stack.urls.orders, { query: '{ listOrderSubmissions { nodes { id } } }' }, ['orders:write'])).body.errors).toEqual([
      expect.objectContaining({ extensions: { code: 'FORBIDDEN', requiredScope: 'read' } }),
    ]);
  });
});

describe('subgraphs check the scopes of their routes beside /graphql too', () => {
  it("an assertion of a key without read, sent straight to the events feed route (the streams' source), reads nothing", async () => {
    const account = await t.newAccount('Direct feed');
    await account.submittedOrder();
    const feedUrl = new URL(eventFeedRoute.path, t.stack.urls.events).toString();
    const body = { after: null, types: null, occurredAfter: null, limit: 10, countUpTo: 0 };
    const refused = await account.postToSubgraph(feedUrl, body, ['orders:write']);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ detail: 'This API key lacks the scope read' });
    const allowed = await account.postToSubgraph(feedUrl, body, ['read']);
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ items: [], endCursor: expect.any(String) });
  });
});

describe('viewer', () => {
  it('needs no scope and shows what the key may do and from where; a change shows at once', async () => {
    const account = await t.newAccount('Viewer');
    const { key, apiKey } = await createKey(t.stack.operator, { accountId: account.accountId, scopes: ['fills:write'], allowedCidrs: ['127.0.0.1', '::1'] });
    const query = '{ viewer { apiKey { scopes allowedCidrs replacesApiKey { id } replacedByApiKey { id } } } }';
    expect((await t.stack.graphql(apiKey, query)).body.data.viewer.apiKey).toEqual({
      scopes: ['FILLS_WRITE'],
      allowedCidrs: ['127.0.0.1/32', '::1/128'],
      replacesApiKey: null,
      replacedByApiKey: null,
    });
    await updateKey(t.stack.operator, { keyId: key.id, scopes: ['read', 'fills:write'] });
    expect((await t.stack.graphql(apiKey, query)).body.data.viewer.apiKey.scopes).toEqual(['READ', 'FILLS_WRITE']);
  });

  it('keys made before scopes, and keys made without any, have every scope and any address', async () => {
    expect((await t.alice.graphql('{ viewer { apiKey { scopes allowedCidrs } } }')).body.data.viewer.apiKey).toEqual({
      scopes: ['READ', 'ORDERS_WRITE', 'FILLS_WRITE', 'STRATEGIES_WRITE', 'WEBHOOKS_WRITE'],
      allowedCidrs: [],
    });
  });
});
