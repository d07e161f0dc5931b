import { loadConfigOrExit } from '@ots/shared/config';
import { migrateService } from '@ots/shared/service';
import { allServices } from './services.ts';

/** The one-shot migration step of docker compose: every service migrates its own schema. */
const config = loadConfigOrExit();
if (!config.databaseUrl) {
  console.error('DATABASE_URL is required');
  process.exit(1);
}
for (const service of allServices) {
  await migrateService(service, config.databaseUrl);
  console.log(`migrated schema ${service.schema}`);
}
