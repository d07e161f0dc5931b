import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Configuration mistakes as an operator meets them: through the real entry points, in their own process. */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

async function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Only what a shell would pass; none of the test run's own configuration.
  const child = spawn(command, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A configuration that were accepted would start the service: stop it rather than hang.
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const entryPoints: [string, string, string[]][] = [
  ['npm start', 'npm', ['start']],
  ['the gateway', process.execPath, ['--import', 'tsx', 'gateway/src/main.ts']],
  ['the orders subgraph', process.execPath, ['--import', 'tsx', 'services/orders/src/main.ts']],
  ['the fills subgraph', process.execPath, ['--import', 'tsx', 'services/fills/src/main.ts']],
];

describe.each(entryPoints)('%s refuses a bad setting with one line and exit code 1', (_name, command, args) => {
  it.each([
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    [{ GATEWAY_PORT: '99999' }, 'GATEWAY_PORT must be a port number from 1 to 65535, got "99999"'],
  ])('%o', async (env, line) => {
    const result = await run(command, args, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/never-reached', ...env });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`${line}\n`);
    expect(result.stdout).toBe('');
  });
});
