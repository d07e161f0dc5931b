import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import { startMetricsServer } from './metrics.ts';
import { stopTracing } from './tracing.ts';

export interface ProcessTelemetry {
  /** Stops serving metrics and sends the spans still buffered; last, so that a stop can be watched to its end. */
  close(): Promise<void>;
}

/** What every server process runs beside its servers: the metrics port (and the tracing started by the preload). */
export async function startProcessTelemetry(config: Pick<Config, 'host' | 'metricsPort'>, logger: Logger): Promise<ProcessTelemetry> {
  const metrics = await startMetricsServer({ host: config.host, port: config.metricsPort, logger });
  return {
    close: async () => {
      await metrics.close();
      await stopTracing();
    },
  };
}
