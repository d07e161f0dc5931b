/**
 * Loaded before the application, because instrumentation must hook a module before its first
 * import: by `node --import ./shared/src/tracing-preload.ts …` (`npm start`), or imported first by
 * the production entry points `dist/<service>/main.js` (the Dockerfile, docker-compose.yml, the
 * Kubernetes manifests). Without OTEL_EXPORTER_OTLP_ENDPOINT (or with the standard
 * OTEL_SDK_DISABLED=true) it does nothing and loads nothing.
 */
import { register } from 'node:module';

/** The service a process runs, from its entry point: `dist/orders/main.js`, `services/orders/src/main.ts`, `gateway/src/main.js`. */
const PROCESS_NAMES = /(?:^|\/)(gateway|accounts|orders|strategies|fills|events)\/(?:src\/)?main\.[jt]s$/;

if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT && process.env.OTEL_SDK_DISABLED !== 'true') {
  // ES modules are hooked by import-in-the-middle, limited to the modules an instrumentation asks
  // for; CommonJS ones (pg, ioredis, graphql, as Node loads them) by require-in-the-middle.
  const { createAddHookMessageChannel } = await import('import-in-the-middle');
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const { startTracing } = await import('./tracing.ts');
  // OTEL_SERVICE_NAME wins; otherwise the process's own name (one process per service in containers).
  const serviceName = process.env.OTEL_SERVICE_NAME ?? PROCESS_NAMES.exec(process.argv[1] ?? '')?.[1] ?? 'order-trading-service';
  await startTracing({ serviceName });
  await waitForAllMessagesAcknowledged();
}
