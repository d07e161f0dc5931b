import { generateKeyPairSync } from 'node:crypto';
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

describe.each([
  ['the gateway', ['--import', 'tsx', 'gateway/src/main.ts']],
  ['the admin CLI', ['--import', 'tsx', 'services/accounts/src/cli.ts', 'account', 'list', '--json']],
])('%s, which hashes API keys, refuses to start in production without API_KEY_HMAC_SECRET', (_name, args) => {
  it('with one line and exit code 1', async () => {
    const env = {
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/never-reached',
      ASSERTION_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    };
    const result = await runCommand(process.execPath, args, { env, killAfterMs: 20_000 });
    expect(result).toMatchObject({ code: 1, stderr: 'NODE_ENV=production refuses development defaults; set API_KEY_HMAC_SECRET\n', stdout: '' });
  });
});
