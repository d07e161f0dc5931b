import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Decimal } from '@ots/shared/decimal';
import { applyFillRoute, type FillVerdict } from '@ots/shared/fill-application';
import { callSubgraphRoute, SubgraphUnavailableError } from '@ots/shared/subgraph-client';

const FILL = {
  fillId: '019aa7ad-91f2-7b10-a3c4-0e8d9f3b2c11',
  orderSubmissionId: '019aa7ad-91f2-7b10-a3c4-0e8d9f3b2c12',
  quantity: '1.50',
  price: '187.25',
  executedAt: '2026-11-24T14:03:07.120+01:00',
};

const ORDER = {
  id: FILL.orderSubmissionId,
  clientOrderId: null,
  symbol: 'AAPL',
  side: 'BUY',
  type: 'LIMIT',
  timeInForce: 'DAY',
  quantity: '10',
  limitPrice: '190',
  stopPrice: null,
  status: 'PARTIALLY_FILLED',
  filledQuantity: '1.5',
  remainingQuantity: '8.5',
  averageFillPrice: '187.25',
  submittedAt: '2026-11-24T13:00:00.000Z',
  updatedAt: '2026-11-24T13:03:07.120Z',
  cancelledAt: null,
  replacedAt: null,
  strategy: { id: '019aa7ad-91f2-7b10-a3c4-0e8d9f3b2c13' },
  replacesOrderSubmission: null,
  replacedBy: null,
} satisfies FillVerdict['orderSubmission'];

describe('the fill route\'s input, as orders checks it', () => {
  it('parses decimals exactly and instants with their offset', () => {
    const fill = applyFillRoute.input.parse(FILL);
    expect(fill.quantity).toBeInstanceOf(Decimal);
    expect(fill.quantity.toFixed()).toBe('1.5');
    expect(fill.price.eq(new Decimal('187.25'))).toBe(true);
    expect(fill.executedAt.toISOString()).toBe('2026-11-24T13:03:07.120Z');
  });

  it.each([
    ['a zero quantity', { quantity: '0' }, ['quantity'], 'must be greater than 0'],
    ['a zero price', { price: '0.000' }, ['price'], 'must be greater than 0'],
    ['a decimal as a number', { quantity: 1.5 }, ['quantity'], ''],
    ['an exponent', { price: '1e3' }, ['price'], 'is not a non-negative decimal'],
    ['more than 10 fraction digits', { price: '1.00000000001' }, ['price'], 'more than 10 fraction digits'],
    ['an id that is not a UUID', { orderSubmissionId: 'order-1' }, ['orderSubmissionId'], 'must be a lower-case UUID'],
    ['an upper-case UUID', { fillId: FILL.fillId.toUpperCase() }, ['fillId'], 'must be a lower-case UUID'],
    ['an instant without a zone', { executedAt: '2026-11-24T14:03:07' }, ['executedAt'], 'is not an ISO-8601 date-time'],
    ['a date that does not exist', { executedAt: '2026-02-31T00:00:00Z' }, ['executedAt'], 'is not a calendar date'],
    ['no execution time', { executedAt: undefined }, ['executedAt'], ''],
  ])('refuses %s, naming the field', (_, change, path, message) => {
    const parsed = applyFillRoute.input.safeParse({ ...FILL, ...change });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.path).toEqual(path);
    expect(parsed.error!.issues[0]!.message).toContain(message);
  });
});

describe('callSubgraphRoute', () => {
  let server: Server;
  let answer: { status: number; body: string };
  let received: { url?: string; headers: Record<string, unknown>; body: string }[] = [];
  let url: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push({ url: request.url, headers: request.headers, body });
        response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/graphql`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const call = () => {
    received = [];
    return callSubgraphRoute({
      caller: 'fills',
      subgraph: 'orders',
      subgraphUrl: url,
      route: applyFillRoute,
      assertion: 'the-assertion',
      requestId: 'request-1',
      timeoutMs: 2_000,
      input: FILL,
    });
  };

  it('POSTs the input as JSON to the route beside /graphql, with the assertion and request id, and returns the answer', async () => {
    answer = { status: 200, body: JSON.stringify({ outcome: 'APPLIED', orderSubmission: ORDER }) };
    expect(await call()).toEqual({ outcome: 'APPLIED', orderSubmission: ORDER });
    expect(received).toHaveLength(1);
    expect(received[0]!.url).toBe('/internal/apply-fill');
    expect(received[0]!.headers).toMatchObject({ 'x-gateway-assertion': 'the-assertion', 'x-request-id': 'request-1', 'content-type': 'application/json' });
    expect(JSON.parse(received[0]!.body)).toEqual(FILL);
  });

  it.each([
    ['a refusal', 400, JSON.stringify({ detail: 'quantity: must be greater than 0' }), /answered HTTP 400/],
    ['a server error', 500, JSON.stringify({ detail: 'Internal server error' }), /answered HTTP 500/],
    ['a body that is not JSON', 200, '<html>', /not JSON/],
    ['an unknown outcome', 200, JSON.stringify({ outcome: 'MAYBE', orderSubmission: null }), /outside its contract/],
    ['an order without its status', 200, JSON.stringify({ outcome: 'APPLIED', orderSubmission: { ...ORDER, status: undefined } }), /outside its contract/],
  ])('turns %s into SubgraphUnavailableError', async (_, status, body, message) => {
    answer = { status, body };
    const failure = await call().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SubgraphUnavailableError);
    expect((failure as Error).message).toMatch(message);
  });
});
