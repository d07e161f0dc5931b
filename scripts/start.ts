import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadConfigOrExit } from '@ots/shared/config';
import { ensureDevDatabase, type DevDatabase } from '@ots/shared/dev-database';
import { createLogger } from '@ots/shared/logger';
import { createAccount, createKey } from '../services/accounts/src/key-management.ts';
import { hasAnyAccount } from '../services/accounts/src/repository.ts';
import { launchStack, migrateAll } from './stack.ts';

/** `npm start`: the whole service in one process, on an embedded Postgres unless DATABASE_URL is set. */
const DEMO_KEY_FILE = fileURLToPath(new URL('../.data/demo-api-key', import.meta.url));

let config = loadConfigOrExit();
const logger = createLogger('ots', config.logLevel);

let devDatabase: DevDatabase | undefined;
if (!config.databaseUrl) {
  devDatabase = await ensureDevDatabase(logger);
  config = { ...config, databaseUrl: devDatabase.url };
}
await migrateAll(config.databaseUrl!);
const stack = await launchStack(config, { logger });

const management = { db: stack.keys.db, config, keyStore: stack.keys.keyStore };
let demoKey: string | undefined;
if (!(await hasAnyAccount(stack.keys.db))) {
  const account = await createAccount(management, 'Demo account');
  demoKey = (await createKey(management, account.id, { name: 'demo' })).apiKey;
  // Kept (owner-only) so later runs can show it again; only for the local development database.
  if (devDatabase) {
    mkdirSync(fileURLToPath(new URL('../.data', import.meta.url)), { recursive: true });
    writeFileSync(DEMO_KEY_FILE, `${demoKey}\n`);
    chmodSync(DEMO_KEY_FILE, 0o600);
  }
} else if (devDatabase && existsSync(DEMO_KEY_FILE)) {
  demoKey = readFileSync(DEMO_KEY_FILE, 'utf8').trim();
}

const endpoint = stack.gateway.url;
console.log(`\nOrder Trading GraphQL Service is running at ${endpoint}`);
if (demoKey) {
  console.log(`Demo API key: ${demoKey}\n\nTry it:\n  curl -s ${endpoint} -H 'Content-Type: application/json' -H 'X-API-Key: ${demoKey}' \\\n    -d '{"query":"{ viewer { account { id name } apiKey { displayPrefix } } }"}'\n`);
} else {
  console.log('Create a key with: npm run admin -- account create --name NAME, then npm run admin -- key create --account ACCOUNT_ID\n');
}

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  logger.info('draining in-flight requests and stopping');
  await stack.close();
  await devDatabase?.stop();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
