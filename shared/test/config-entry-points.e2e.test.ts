import { describe, expect, it } from 'vitest';
import { runCommand } from '@ots/shared/testing/processes';

/** Configuration mistakes as an operator meets them: through the real entry points, in their own process. */

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
    // A configuration that were accepted would start the service: it is stopped rather than left to hang.
    const result = await runCommand(command, args, { env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/never-reached', ...env }, killAfterMs: 20_000 });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`${line}\n`);
    expect(result.stdout).toBe('');
  });
});
