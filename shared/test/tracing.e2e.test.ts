import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, stopTracing } from '@ots/shared/tracing';
import type { TestStack } from '../../testing/stack.ts';

/**
 * Tracing as an operator sees it: one client request is one trace, from the gateway through every
 * subgraph it reaches, including a subgraph's own call to another. Spans are kept in memory here
 * instead of going out by OTLP.
 */
const exporter = new InMemorySpanExporter();
let stack: TestStack;

beforeAll(async () => {
  await startTracing({ serviceName: 'tracing-test', exporter });
  // Loaded after tracing started, as the preload arranges in a real process: instrumentation hooks modules as they load.
  const { startStack } = await import('../../testing/stack.ts');
  stack = await startStack();
});

afterAll(async () => {
  await stack?.close();
  await stopTracing();
});

/** The server span each server of the stack made for its part of the request. */
const serverSpans = (spans: ReadableSpan[]) => spans.filter((span) => typeof span.attributes['ots.service'] === 'string');

describe('traces', () => {
  it('carry one request across the gateway, orders and the strategies subgraph that orders calls', async () => {
    const client = await stack.createAccountWithKey();
    const created = await stack.graphql(client.apiKey, 'mutation { createStrategy(input: { name: "Traced" }) { strategy { id } } }');
    const strategyId = created.body.data.createStrategy.strategy.id as string;
    exporter.reset();

    const response = await stack.graphql(
      client.apiKey,
      'mutation Submit($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } error { code } } }',
      { input: { symbol: 'ACME', side: 'BUY', type: 'MARKET', quantity: '1', strategyId } },
    );
    expect(response.body.data.submitOrder.error).toBeNull();
    const requestId = response.headers.get('x-request-id');

    await expect
      .poll(() => serverSpans(exporter.getFinishedSpans()).filter((span) => span.attributes['ots.request_id'] === requestId).map((span) => span.attributes['ots.service']).sort())
      .toEqual(['gateway', 'orders', 'strategies']);
    const spans = exporter.getFinishedSpans();
    const servers = serverSpans(spans).filter((span) => span.attributes['ots.request_id'] === requestId);
    const byService = new Map(servers.map((span) => [span.attributes['ots.service'], span]));
    const gateway = byService.get('gateway')!;
    const traceId = gateway.spanContext().traceId;

    // One trace: every server's span. (Its root is the test's own fetch, which this process traces too.)
    expect(servers.map((span) => span.spanContext().traceId)).toEqual([traceId, traceId, traceId]);
    expect(gateway.attributes['graphql.operation.name']).toBe('Submit');

    // Each subgraph's span is the child of the outgoing call (traceparent) that reached it: orders'
    // of a call the gateway made, strategies' of a call orders made.
    const spanById = new Map(spans.map((span) => [span.spanContext().spanId, span]));
    const ancestors = (span: ReadableSpan): ReadableSpan[] => {
      const parent = span.parentSpanContext && spanById.get(span.parentSpanContext.spanId);
      return parent ? [parent, ...ancestors(parent)] : [];
    };
    expect(ancestors(byService.get('orders')!)).toContain(gateway);
    expect(ancestors(byService.get('strategies')!)).toContain(byService.get('orders'));
  });

  it('record no variables: input values never reach a span', async () => {
    const client = await stack.createAccountWithKey();
    exporter.reset();
    await stack.graphql(client.apiKey, 'mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { id } } }', {
      input: { name: 'secret-strategy-name' },
    });
    await expect.poll(() => serverSpans(exporter.getFinishedSpans()).length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(exporter.getFinishedSpans().map((span) => ({ name: span.name, attributes: span.attributes, events: span.events })))).not.toContain('secret-strategy-name');
  });
});
