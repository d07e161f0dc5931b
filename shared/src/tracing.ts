import type { Sampler, SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * OpenTelemetry tracing. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: then `tracing-preload.ts`
 * (loaded with `node --import`, before the modules it instruments) starts it, and spans go out by
 * OTLP (http/protobuf) as the standard OTEL_EXPORTER_OTLP_* variables say. Incoming and outgoing HTTP carry W3C `traceparent`,
 * so one client request is one trace across the gateway and every subgraph it reaches. Metrics
 * and logs stay with prom-client and pino, so this sets up the SDK's tracing part (what
 * @opentelemetry/sdk-node would set up for traces) without sdk-node itself, whose exporters of every
 * signal and protocol would add 140 MB to the production image for nothing it uses.
 *
 * Nothing here imports the SDK until tracing starts, so a process without tracing loads none of it.
 */
export interface TracingOptions {
  serviceName: string;
  /** Default: OTLP, as OTEL_EXPORTER_OTLP_* configure it. Tests pass an in-memory exporter. */
  exporter?: SpanExporter;
}

/** Set by startTracing; read by stopTracing, which may run in another copy of this module (the preload's). */
const STOP = Symbol.for('ots.tracing.stop');
type WithStop = { [STOP]?: () => Promise<void> };

/** Requests that are not work: probes and scrapes would crowd out the traces that matter. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export async function startTracing(options: TracingOptions): Promise<void> {
  const [{ SpanKind }, { registerInstrumentations }, resources, { ATTR_SERVICE_NAME }, traceBase, { NodeTracerProvider }, { OTLPTraceExporter }, http, undici, pg, ioredis, graphql] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/instrumentation'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/semantic-conventions'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-proto'),
      import('@opentelemetry/instrumentation-http'),
      import('@opentelemetry/instrumentation-undici'),
      import('@opentelemetry/instrumentation-pg'),
      import('@opentelemetry/instrumentation-ioredis'),
      import('@opentelemetry/instrumentation-graphql'),
    ]);
  // A trace starts where work comes in: a request. Schema parsing
  // at start-up and other spans outside of any request are not traces anyone looks for.
  const requestRoots: Sampler = {
    shouldSample: (_context, _traceId, _name, kind) => ({
      decision: kind === SpanKind.SERVER || kind === SpanKind.CLIENT ? traceBase.SamplingDecision.RECORD_AND_SAMPLED : traceBase.SamplingDecision.NOT_RECORD,
    }),
    toString: () => 'RequestRoots',
  };
  const provider = new NodeTracerProvider({
    resource: resources
      .resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName })
      .merge(resources.detectResources({ detectors: [resources.processDetector, resources.hostDetector, resources.envDetector] })),
    // OTEL_TRACES_SAMPLER (e.g. a ratio for a busy site) replaces this one.
    ...(process.env.OTEL_TRACES_SAMPLER ? {} : { sampler: new traceBase.ParentBasedSampler({ root: requestRoots }) }),
    spanProcessors: [
      options.exporter ? new traceBase.SimpleSpanProcessor(options.exporter) : new traceBase.BatchSpanProcessor(new OTLPTraceExporter()),
    ],
  });
  // The async-hooks context manager and the W3C traceparent/tracestate propagator.
  provider.register();
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new http.HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0] ?? ''),
      }),
      // undici, through its diagnostics channels: the gateway's subgraph fetches and the calls between
      // services (`postJson`, shared/src/http-client.ts).
      new undici.UndiciInstrumentation(),
      // Only within a request: pool housekeeping and key-cache polling make no traces of their own.
      new pg.PgInstrumentation({ requireParentSpan: true }),
      new ioredis.IORedisInstrumentation({ requireParentSpan: true }),
      // Resolvers that only read a property are left out; the spans that remain show where time went.
      new graphql.GraphQLInstrumentation({ ignoreTrivialResolveSpans: true, mergeItems: true }),
    ],
  });
  (globalThis as WithStop)[STOP] = async () => {
    unregister();
    await provider.shutdown();
  };
}

/** Sends the spans still buffered and stops tracing; nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stop = (globalThis as WithStop)[STOP];
  delete (globalThis as WithStop)[STOP];
  await stop?.();
}
