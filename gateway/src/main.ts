import { gatewaySettings, loadConfigOrExit } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { stopOnSignals } from '@ots/shared/service';
import { startProcessTelemetry } from '@ots/shared/telemetry';
import { openKeyStore } from '@ots/accounts';
import { startGateway } from './server.ts';

const config = gatewaySettings(loadConfigOrExit());
if (!config.assertionPrivateKey) {
  process.stderr.write('the gateway signs assertions: set ASSERTION_PRIVATE_KEY\n');
  process.exit(1);
}
const logger = createLogger('gateway', config.logLevel);
const telemetry = await startProcessTelemetry(config, logger);
const keys = openKeyStore(config, logger, { listen: true });
const gateway = await startGateway({
  config,
  keyStore: keys.keyStore,
  redis: keys.redis,
  logger,
});

stopOnSignals(async () => {
  await gateway.close();
  await keys.close();
  await telemetry.close();
}, logger);
