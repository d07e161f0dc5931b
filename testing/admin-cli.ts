import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import type { TestStack } from './stack.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run admin -- <words>` as an operator runs it (a process of its own, from the project root),
 * against the stack's database and Redis, with `env` added to its environment: the CLI's sources,
 * bundled once for the run (testing/admin-cli-bundle.ts) rather than loaded through tsx each time.
 */
export function runAdminCli(stack: TestStack, words: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return run(stack, process.execPath, [inject('adminCliBundle'), ...words], env);
}

/** The same, through `npm run admin` itself: the command the README documents. */
export function runAdminCliThroughNpm(stack: TestStack, words: string[]): Promise<CliResult> {
  return run(stack, 'npm', ['run', '--silent', 'admin', '--', ...words], {});
}

function run(stack: TestStack, command: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
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
