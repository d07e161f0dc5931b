import { databaseUrlOf, loadConfigOrExit, SERVICE_NAMES } from '@ots/shared/config';
import { ensureDevDatabase, type DevDatabase } from '@ots/shared/dev-database';
import { createLogger } from '@ots/shared/logger';
import { stopOnSignals } from '@ots/shared/service';
import { demoOwnerLink, operatorScope } from '@ots/accounts';
import { startProcessTelemetry, type ProcessTelemetry } from '@ots/shared/telemetry';
import { composeAndWrite } from '@ots/gateway/compose';
import { ensureConsoleBuilt } from '../console/ensure-built.ts';
import { demoKeyNotice, demoLinkNotice } from './demo-key.ts';
import { launchStack, migrateAll, type RunningStack } from './stack.ts';

/**
 * `npm start`: composes the supergraph, then runs the whole service in one process, on an embedded
 * Postgres for the services that DATABASE_URL and <SERVICE>_DATABASE_URL leave without one. One
 * process, so that a stop signal reaches the code that drains.
 */
let config = loadConfigOrExit();
try {
  composeAndWrite();
  ensureConsoleBuilt();
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
const logger = createLogger('ots', config.logLevel);

let devDatabase: DevDatabase | undefined;
let stack: RunningStack;
let telemetry: ProcessTelemetry;
try {
  telemetry = await startProcessTelemetry(config, logger);
  if (SERVICE_NAMES.some((name) => !databaseUrlOf(config, name))) {
    devDatabase = await ensureDevDatabase(logger);
    config = { ...config, databaseUrl: devDatabase.url };
  }
  await migrateAll(config);
  stack = await launchStack(config, { logger });
} catch (error) {
  const { code, message } = error as NodeJS.ErrnoException;
  console.error(code === 'EADDRINUSE' ? `cannot start: ${message} (set the *_PORT variables to use other ports)` : `cannot start: ${message}`);
  await devDatabase?.stop();
  process.exit(1);
}

const endpoint = stack.gateway.url;
console.log(`\nOrder Trading GraphQL Service is running at ${endpoint}`);
const operator = operatorScope(stack.keys, config, logger);
const demo = await demoKeyNotice({
  operator,
  endpoint,
  consoleUrl: `${config.consoleBaseUrl}/`,
  keep: devDatabase !== undefined,
  production: config.production,
  terminal: process.stdout.isTTY === true,
});
console.log(demo.text);
const demoLink = config.production ? undefined : await demoOwnerLink(operator, { email: 'demo@example.com', newAccountId: demo.createdAccountId });
console.log(`Console: ${config.consoleBaseUrl}/`);
const demoLinkText = demoLinkNotice(demoLink, { keep: devDatabase !== undefined, terminal: process.stdout.isTTY === true });
if (demoLinkText) console.log(demoLinkText);

stopOnSignals(async () => {
  logger.info('draining in-flight requests and stopping');
  await stack.close();
  await devDatabase?.stop();
  await telemetry.close();
}, logger);
