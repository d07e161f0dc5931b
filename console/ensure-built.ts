import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CONSOLE_DIR, DIST_DIR, SOURCE_HASH_FILE, consoleSourceHash } from './source-hash.ts';

function builtHash(): string | undefined {
  try {
    return readFileSync(join(DIST_DIR, SOURCE_HASH_FILE), 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * Builds the console into console/dist when it is missing or was built from other sources, so a
 * newcomer's `npm ci` then `npm start` serves a current console. Throws when the build fails.
 */
export function ensureConsoleBuilt(log: (line: string) => void = console.log): void {
  // A production image ships the build without its sources: nothing to compare, nothing to build.
  if (!existsSync(join(CONSOLE_DIR, 'src'))) return;
  if (builtHash() === consoleSourceHash()) return;
  log('Building the console (console/dist)…');
  const require = createRequire(import.meta.url);
  const vite = join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js');
  const result = spawnSync(process.execPath, [vite, 'build', '--logLevel', 'warn'], { cwd: CONSOLE_DIR, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('the console build failed (see above)');
}
