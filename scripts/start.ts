import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigOrExit } from '@ots/shared/config';
import { ensureDevDatabase, type DevDatabase } from '@ots/shared/dev-database';
import { createLogger } from '@ots/shared/logger';
import { stopOnSignals } from '@ots/shared/service';
import { decideKey, hashApiKey } from '../services/accounts/src/domain.ts';
import { createAccount, createKey } from '../services/accounts/src/key-management.ts';
import { hasAnyAccount } from '../services/accounts/src/repository.ts';
import { demoOwnerLink } from '../services/accounts/src/console/use-cases.ts';
import { composeAndWrite } from '../gateway/src/compose.ts';
import { ensureConsoleBuilt } from '../console/ensure-built.ts';
import { launchStack, migrateAll, type RunningStack } from './stack.ts';

/**
 * `npm start`: composes the supergraph, then runs the whole service in one process, on an embedded
 * Postgres unless DATABASE_URL is set. One process, so that a stop signal reaches the code that drains.
 */
const DEMO_KEY_FILE = fileURLToPath(new URL('../.data/demo-api-key', import.meta.url));

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
try {
  if (!config.databaseUrl) {
    devDatabase = await ensureDevDatabase(logger);
    config = { ...config, databaseUrl: devDatabase.url };
  }
  await migrateAll(config.databaseUrl!);
  stack = await launchStack(config, { logger });
} catch (error) {
  const { code, message } = error as NodeJS.ErrnoException;
  console.error(code === 'EADDRINUSE' ? `cannot start: ${message} (set the *_PORT variables to use other ports)` : `cannot start: ${message}`);
  await devDatabase?.stop();
  process.exit(1);
}

/**
 * A first run on an empty development database gets a demo account and key. The key is kept
 * (owner-only) for the embedded database so later runs can show it again while it still works;
 * production never gets one.
 */
let demoAccountId: string | undefined;
async function demoKey(): Promise<string | undefined> {
  const management = { db: stack.keys.db, config, keyStore: stack.keys.keyStore };
  if (config.production) return undefined;
  if (!(await hasAnyAccount(stack.keys.db))) {
    const account = await createAccount(management, 'Demo account');
    demoAccountId = account.id;
    const { apiKey } = await createKey(management, account.id, { name: 'demo' });
    if (devDatabase) {
      mkdirSync(dirname(DEMO_KEY_FILE), { recursive: true });
      writeFileSync(DEMO_KEY_FILE, `${apiKey}\n`, { mode: 0o600 });
    }
    return apiKey;
  }
  if (!devDatabase || !existsSync(DEMO_KEY_FILE)) return undefined;
  const kept = readFileSync(DEMO_KEY_FILE, 'utf8').trim();
  const record = await stack.keys.keyStore.lookup(hashApiKey(config.apiKeyHmacSecret, kept));
  return decideKey(record, Date.now()).kind === 'authenticated' ? kept : undefined;
}

const key = await demoKey();
const endpoint = stack.gateway.url;
console.log(`\nOrder Trading GraphQL Service is running at ${endpoint}`);
if (key) {
  console.log(`Demo API key: ${key}\n\nTry it:\n  curl -s ${endpoint} -H 'Content-Type: application/json' -H 'X-API-Key: ${key}' \\\n    -d '{"query":"{ viewer { account { id name } apiKey { displayPrefix } } }"}'\n`);
} else {
  console.log('Create a key with: npm run admin -- account create --name NAME, then npm run admin -- key create --account ACCOUNT_ID\n');
}
const consoleDeps = { db: stack.keys.db, keys: { db: stack.keys.db, config, keyStore: stack.keys.keyStore }, consoleBaseUrl: config.consoleBaseUrl, now: Date.now };
const demoLink = config.production ? undefined : await demoOwnerLink(consoleDeps, 'demo@example.com', demoAccountId);
console.log(`Console: ${config.consoleBaseUrl}/`);
if (demoLink) console.log(`Demo owner demo@example.com: set a password (one-time link, valid 24 hours) and you are signed in:\n  ${demoLink}\n`);

stopOnSignals(async () => {
  logger.info('draining in-flight requests and stopping');
  await stack.close();
  await devDatabase?.stop();
});
