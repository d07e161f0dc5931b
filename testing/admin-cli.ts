import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TestStack } from './stack.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run admin -- <words>` as an operator runs it (a process of its own, from the project root),
 * against the stack's database and Redis, with `env` added to its environment.
 */
export function runAdminCli(stack: TestStack, words: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'services/accounts/src/cli.ts', ...words],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          DATABASE_URL: stack.databaseUrl,
          REDIS_URL: stack.config.redisUrl,
          REDIS_KEY_PREFIX: stack.config.redisKeyPrefix,
          ...env,
        },
        timeout: 20_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}
