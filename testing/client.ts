import pg from 'pg';
import { expect } from 'vitest';
import { Kind, print, type DocumentNode, type FragmentDefinitionNode } from 'graphql';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { signAssertion } from '@ots/shared/assertion';
import { API_KEY_SCOPES } from '@ots/shared/scopes';
import type { HttpResult, TestStack } from './stack.ts';
import { data, topLevelError, type Client } from './requests.ts';
import { listEvents } from './events.ts';
import * as operations from './generated/operations.ts';
import {
  ArchiveStrategyDocument,
  CancelOrderDocument,
  CancelOrdersDocument,
  CreateStrategyDocument,
  CreateWebhookEndpointDocument,
  EventDocument,
  FillDocument,
  FullOrderDocument,
  ListFillsDocument,
  ListOrdersDocument,
  ListStrategiesDocument,
  OrderDocument,
  OrderWithFillsDocument,
  PauseStrategyDocument,
  RecordFillDocument,
  ReplaceOrderDocument,
  ResumeStrategyDocument,
  StrategyDocument,
  SubmitOrderDocument,
  UpdateStrategyDocument,
  type CancelOrderSubmissionsFilter,
  type CreateStrategyInput,
  type CreateStrategyMutation,
  type CreateWebhookEndpointInput,
  type EventFieldsFragment,
  type ListEventsQueryVariables,
  type ListFillsQueryVariables,
  type ListOrdersQuery,
  type ListOrdersQueryVariables,
  type ListStrategiesQueryVariables,
  type OrderFieldsFragment,
  type RecordFillInput,
  type ReplaceOrderSubmissionInput,
  type SubmitOrderInput,
  type UpdateStrategyInput,
} from './generated/operations.ts';

export type * from './generated/operations.ts';

/** Every fragment of testing/operations/fragments.graphql, by name. */
const FRAGMENTS = new Map<string, FragmentDefinitionNode>(
  Object.values(operations as Record<string, unknown>)
    .filter((value): value is DocumentNode => typeof value === 'object' && value !== null && 'definitions' in value)
    .flatMap((document) => document.definitions)
    .filter((definition): definition is FragmentDefinitionNode => definition.kind === Kind.FRAGMENT_DEFINITION)
    .map((definition) => [definition.name.value, definition]),
);

/**
 * A hand-written document with the definitions of the shared fragments it spreads (`...OrderFields`,
 * `error { ...ErrorFields }`) appended, so that documents that must stay strings share the field lists.
 */
export function withFragments(document: string): string {
  const included = new Set<string>();
  const pending = [document];
  for (let text = pending.pop(); text !== undefined; text = pending.pop()) {
    for (const [, name] of text.matchAll(/\.\.\.\s*([_A-Za-z]\w*)/g)) {
      const fragment = FRAGMENTS.get(name!);
      if (!fragment || included.has(name!)) continue;
      included.add(name!);
      pending.push(print(fragment));
    }
  }
  return [document, ...[...included].map((name) => print(FRAGMENTS.get(name)!))].join('\n');
}

/** An order as the tests read it (the OrderFields fragment). */
export type Order = OrderFieldsFragment;
export type OrderPage = ListOrdersQuery['listOrderSubmissions'];
export type StrategyStatusMutation = 'pauseStrategy' | 'resumeStrategy' | 'archiveStrategy';

type StrategyPayload = CreateStrategyMutation['createStrategy'];

const STATUS_DOCUMENTS = {
  pauseStrategy: PauseStrategyDocument,
  resumeStrategy: ResumeStrategyDocument,
  archiveStrategy: ArchiveStrategyDocument,
} as const;

/**
 * One account of a running stack, with one of its keys, and the typed operations of
 * testing/operations/*.graphql sent through the gateway with that key. Each returns `data`'s part for
 * its root field and fails the test on a top-level error, as `data` does.
 */
export class ApiClient implements Client {
  readonly accountId: string;
  readonly apiKeyId: string;
  readonly apiKey: string;

  constructor(
    readonly stack: TestStack,
    credentials: Client,
  ) {
    this.accountId = credentials.accountId;
    this.apiKeyId = credentials.apiKeyId;
    this.apiKey = credentials.apiKey;
  }

  /** Runs a generated document and returns its `data`, failing the test on any top-level error. */
  async run<Result, Variables>(document: TypedDocumentNode<Result, Variables>, variables?: Variables): Promise<Result> {
    return (await data(this.stack, this, print(document), variables as Record<string, unknown> | undefined)) as Result;
  }

  /** A hand-written document (for fields no generated operation selects); `data`, failing on a top-level error. */
  // The parsed JSON body: tests read what they assert on.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a hand-written document's data, read field by field by the assertions
  async data(query: string, variables?: Record<string, unknown>): Promise<any> {
    return data(this.stack, this, query, variables);
  }

  /** The first top-level error a hand-written document fails with. */
  topLevelError(query: string, variables?: Record<string, unknown>) {
    return topLevelError(this.stack, this, query, variables);
  }

  /** The raw HTTP answer to a hand-written document, for tests of errors and status codes. */
  graphql(query: string, variables?: Record<string, unknown>): Promise<HttpResult> {
    return this.stack.graphql(this.apiKey, query, variables);
  }

  /** A request straight to a subgraph, as a subgraph-to-subgraph call sends it: with a gateway-signed assertion. */
  callSubgraph(url: string, query: string, variables?: Record<string, unknown>): Promise<HttpResult> {
    return this.postToSubgraph(url, { query, variables });
  }

  /** A JSON body POSTed straight to a subgraph's URL (/graphql or a route beside it), with a gateway-signed assertion. */
  postToSubgraph(url: string, body: unknown, scopes: readonly string[] = API_KEY_SCOPES): Promise<HttpResult> {
    const assertion = signAssertion(this.stack.config.assertionPrivateKey!, { accountId: this.accountId, apiKeyId: this.apiKeyId, scopes }, 60);
    return this.stack.post(JSON.stringify(body), { 'content-type': 'application/json', 'x-gateway-assertion': assertion }, url);
  }

  async submitOrder(input: SubmitOrderInput) {
    return (await this.run(SubmitOrderDocument, { input })).submitOrder;
  }

  /** Submits (a MARKET buy of 1 AAPL unless `input` says otherwise) and returns the order, failing the test on a payload error. */
  async submittedOrder(input: Partial<SubmitOrderInput> = {}): Promise<Order> {
    const payload = await this.submitOrder({ symbol: 'AAPL', side: 'BUY', type: 'MARKET', quantity: '1', ...input });
    expect(payload.error).toBeNull();
    return payload.orderSubmission!;
  }

  async cancelOrder(id: string) {
    return (await this.run(CancelOrderDocument, { id })).cancelOrderSubmission;
  }

  async order(id: string) {
    return (await this.run(OrderDocument, { id })).orderSubmission;
  }

  /** Every field of the order, references as ids: what an order event's `data` holds. */
  async fullOrder(id: string) {
    return (await this.run(FullOrderDocument, { id })).orderSubmission;
  }

  async replaceOrder(id: string, input: ReplaceOrderSubmissionInput) {
    return (await this.run(ReplaceOrderDocument, { id, input })).replaceOrderSubmission;
  }

  async cancelOrders(filter?: CancelOrderSubmissionsFilter) {
    return (await this.run(CancelOrdersDocument, { filter })).cancelOrderSubmissions;
  }

  async orderWithFills(id: string) {
    return (await this.run(OrderWithFillsDocument, { id })).orderSubmission;
  }

  async listOrders(variables: ListOrdersQueryVariables = {}): Promise<OrderPage> {
    return (await this.run(ListOrdersDocument, variables)).listOrderSubmissions;
  }

  /** Every page of a listing, following endCursor. */
  async listAllOrders(variables: Omit<ListOrdersQueryVariables, 'first' | 'after'> = {}): Promise<Order[]> {
    const orders: Order[] = [];
    let after: string | null = null;
    do {
      const page: OrderPage = await this.listOrders({ ...variables, first: 200, after });
      orders.push(...page.nodes);
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    } while (after);
    return orders;
  }

  async recordFill(input: RecordFillInput) {
    return (await this.run(RecordFillDocument, { input })).recordFill;
  }

  async fill(id: string) {
    return (await this.run(FillDocument, { id })).fill;
  }

  async listFills(variables: ListFillsQueryVariables = {}) {
    return (await this.run(ListFillsDocument, variables)).listFills;
  }

  async createStrategy(input: CreateStrategyInput) {
    return (await this.run(CreateStrategyDocument, { input })).createStrategy;
  }

  /** Creates a strategy and returns it, failing the test on a payload error. */
  async createdStrategy(name: string, description?: string | null) {
    const payload = await this.createStrategy(description === undefined ? { name } : { name, description });
    expect(payload.error).toBeNull();
    return payload.strategy!;
  }

  async updateStrategy(id: string, input: UpdateStrategyInput) {
    return (await this.run(UpdateStrategyDocument, { id, input })).updateStrategy;
  }

  /** Runs pause/resume/archive and returns the payload. */
  async changeStrategyStatus(mutation: StrategyStatusMutation, id: string) {
    const document = STATUS_DOCUMENTS[mutation] as TypedDocumentNode<Record<StrategyStatusMutation, StrategyPayload>, { id: string }>;
    return (await this.run(document, { id }))[mutation];
  }

  async strategy(id: string) {
    return (await this.run(StrategyDocument, { id })).strategy;
  }

  async listStrategies(variables: ListStrategiesQueryVariables = {}) {
    return (await this.run(ListStrategiesDocument, variables)).listStrategies;
  }

  listEvents(variables: ListEventsQueryVariables = {}) {
    return listEvents(this.stack, this, variables);
  }

  async event(id: string) {
    return (await this.run(EventDocument, { id })).event;
  }

  /**
   * Every event the account will ever have from these producers' outboxes, once it has all arrived:
   * waits until the outboxes hold none of the account's rows (a relay deletes a row only once events
   * has stored it; every change the test made wrote its row before its answer), counts the account's
   * rows in events.events, then reads the feed until it shows as many. Counting the feed alone may stop
   * short of a late event: the commit-ordered feed holds back a row while an older transaction is open
   * anywhere on the server, another test file's included.
   */
  async allEvents(producers: readonly ('orders' | 'strategies')[], timeoutMs = 15_000): Promise<EventFieldsFragment[]> {
    const database = new pg.Client({ connectionString: this.stack.databaseUrl });
    await database.connect();
    let stored: number;
    try {
      const deadline = Date.now() + timeoutMs;
      const waiting = async (schema: string) =>
        (await database.query<{ count: number }>(`select count(*)::int as count from ${schema}.outbox where account_id = $1`, [this.accountId])).rows[0]!.count;
      for (;;) {
        const counts = await Promise.all(producers.map(waiting));
        if (counts.every((count) => count === 0)) break;
        if (Date.now() > deadline) throw new Error(`the outboxes of ${producers.join(', ')} still hold ${counts.join(', ')} of the account's events`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      stored = (await database.query<{ count: number }>('select count(*)::int as count from events.events where account_id = $1', [this.accountId])).rows[0]!.count;
    } finally {
      await database.end();
    }
    const events = await this.waitForEvents(stored, timeoutMs);
    expect(events).toHaveLength(stored);
    return events;
  }

  /** Pages listEvents until `count` events have arrived (the relay forwards them asynchronously). */
  async waitForEvents(count: number, timeoutMs = 20_000): Promise<EventFieldsFragment[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const page = await this.listEvents({ first: 200 });
      if (page.nodes.length >= count) return page.nodes;
      if (Date.now() > deadline) throw new Error(`expected ${count} events, the feed has ${page.nodes.length}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async createWebhookEndpoint(input: CreateWebhookEndpointInput) {
    return (await this.run(CreateWebhookEndpointDocument, { input })).createWebhookEndpoint;
  }

  /** Creates an endpoint and returns it with its secret, failing the test on a payload error. */
  async createdWebhookEndpoint(input: CreateWebhookEndpointInput) {
    const payload = await this.createWebhookEndpoint(input);
    expect(payload.error).toBeNull();
    return { endpoint: payload.webhookEndpoint!, secret: payload.signingSecret! };
  }
}
