import { loadConfig, type Config } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { createAccount, createKey, operatorScope, type OperatorScope } from '@ots/accounts';
import { createBenchDatabase } from './bench-database.ts';
import { launchStack, type RunningStack } from './stack.ts';

export interface BenchStack {
  config: Config;
  stack: RunningStack;
  operator: OperatorScope;
  /** A key of the bench's own account. */
  apiKey: string;
  /** Stops the stack and drops the throwaway database. */
  close(): Promise<void>;
}

/**
 * The whole stack in this process, on a throwaway database (on DATABASE_URL's server, else the
 * embedded Postgres), with the rate limit out of the way and one account with a key: what every
 * part of `npm run bench` measures against.
 */
export async function openBenchStack(name: string): Promise<BenchStack> {
  const logger = createLogger(name, 'warn');
  const base = loadConfig({ ...process.env, LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '1000000' });
  const database = await createBenchDatabase(base, logger, name.replace(/-/g, '_'));
  const { config } = database;
  const stack = await launchStack(config, { freePorts: true, logger });
  const operator = operatorScope(stack.keys, config, logger);
  const account = await createAccount(operator, { name: `Bench account (${name})` });
  const { apiKey } = await createKey(operator, { accountId: account.id, name });
  return {
    config,
    stack,
    operator,
    apiKey,
    close: async () => {
      await stack.close();
      await database.drop();
    },
  };
}
