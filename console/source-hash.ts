import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CONSOLE_DIR = fileURLToPath(new URL('.', import.meta.url));
export const DIST_DIR = join(CONSOLE_DIR, 'dist');
/** Written into dist/ by the build: the hash of the sources it was built from. */
export const SOURCE_HASH_FILE = '.source-hash';

const INPUTS = ['index.html', 'vite.config.ts', 'source-hash.ts', 'package.json', 'src', '../package-lock.json'];

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name)));
}

/**
 * The hash of everything the console build reads (its sources, its config, the locked dependency
 * versions), so `npm start` can tell a stale build from a current one whatever the files' times say
 * (a checkout or a copy resets them).
 */
export function consoleSourceHash(): string {
  const hash = createHash('sha256');
  for (const input of INPUTS) {
    for (const file of filesUnder(join(CONSOLE_DIR, input))) {
      hash.update(relative(CONSOLE_DIR, file)).update('\0').update(readFileSync(file)).update('\0');
    }
  }
  return hash.digest('hex');
}
