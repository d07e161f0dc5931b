import { loadConfigOrExit } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { stopOnSignals } from '@ots/shared/service';
import { startProcessTelemetry } from '@ots/shared/telemetry';
import { launchStack } from './stack.ts';

/**
 * The `npm start` layout for `npm run bench`: the five subgraphs and the gateway in one process, as
 * `scripts/start.ts` runs them, on the database and ports the bench gives in the environment (no
 * composition, console build or demo key, which `npm start` does once before serving).
 */
const config = loadConfigOrExit();
const logger = createLogger('bench-server', config.logLevel);
const telemetry = await startProcessTelemetry(config, logger);
const stack = await launchStack(config, { logger });
stopOnSignals(async () => {
  await stack.close();
  await telemetry.close();
}, logger);
