import { parseArgs } from 'node:util';
import { databaseUrlOf, databaseVariablesOf, loadConfigOrExit, SERVICE_NAMES, type ServiceName } from '@ots/shared/config';
import { migrateService } from '@ots/shared/service';
import { allServices } from './services.ts';

/**
 * The one-shot migration step run before a rollout: `--service <name>` migrates that subgraph's
 * schema alone (its team's step), otherwise every subgraph migrates its own; each on its
 * <SERVICE>_DATABASE_URL, else DATABASE_URL.
 */
let only: ServiceName | undefined;
try {
  const { values } = parseArgs({ options: { service: { type: 'string' } } });
  if (values.service !== undefined && !SERVICE_NAMES.includes(values.service as ServiceName)) {
    throw new Error(`--service takes one of ${SERVICE_NAMES.join(', ')}, got "${values.service}"`);
  }
  only = values.service as ServiceName | undefined;
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
// Migrations read the database URLs alone: the production refusal of development secrets is for the
// processes that use them, so a migration Job holds its database's Secret and nothing else.
const config = loadConfigOrExit({ ...process.env, NODE_ENV: undefined });
const services = allServices.filter((service) => only === undefined || service.name === only);
const unset = services.filter((service) => !databaseUrlOf(config, service.name));
if (unset.length > 0) {
  console.error(unset.map((service) => `${service.name}: ${databaseVariablesOf(service.name)} is required`).join('\n'));
  process.exit(1);
}
for (const service of services) {
  await migrateService(service, databaseUrlOf(config, service.name)!);
  console.log(`migrated schema ${service.schema}`);
}
