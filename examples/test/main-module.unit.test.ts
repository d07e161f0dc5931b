import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '@ots/shared/testing/processes';

/**
 * Each example run as a program does its work from wherever it is: from a directory whose path has a
 * space and a non-ASCII character (which `import.meta.url` percent-encodes), it still sees that it is
 * the program and, started without its settings, prints its usage and exits 2 (not 0 having done nothing).
 */
const EXAMPLES = fileURLToPath(new URL('..', import.meta.url));
const parent = mkdtempSync(join(tmpdir(), 'ots-examples-'));
const directory = join(parent, 'my bots é');
mkdirSync(directory);
// Its packages resolve from the repository's node_modules, as in a user's project.
symlinkSync(join(EXAMPLES, '..', 'node_modules'), join(directory, 'node_modules'));
for (const file of ['package.json', 'fills-bot.ts', 'import-fills.ts', 'webhook-receiver.ts', 'main-module.ts']) copyFileSync(join(EXAMPLES, file), join(directory, file));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe('an example started from a path with a space and a non-ASCII character', () => {
  it.each(['fills-bot.ts', 'import-fills.ts', 'webhook-receiver.ts'])('%s runs as the program', async (example) => {
    const run = await runCommand(process.execPath, ['--import', 'tsx', join(directory, example)], { env: {} });
    expect(run.stderr).toContain('usage:');
    expect(run.code).toBe(2);
  });
});
