import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
/** The console and the examples are applications that no package imports: they declare no exports, and are left out. */
const APPLICATIONS = new Set(['console', 'examples']);
const workspaces: string[] = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces.filter(
  (workspace: string) => !APPLICATIONS.has(workspace),
);

/** Every target of an `exports` map, with its condition; nested conditions are flattened. */
function targetsOf(exports: unknown, condition = 'default'): { condition: string; target: string }[] {
  if (typeof exports === 'string') return [{ condition, target: exports }];
  if (!exports || typeof exports !== 'object') return [];
  return Object.entries(exports).flatMap(([key, value]) => targetsOf(value, key.startsWith('.') ? condition : key));
}

/**
 * A source target names a file (or, with `*`, a folder holding .ts files) that exists; a `compiled`
 * target names the JavaScript that `npm run compile` writes beside a source that exists; a `dist/`
 * target (@ots/client, built on its own) names what its build writes from a source in `src/`.
 */
function exists(target: string, condition: string, packageDir: string): boolean {
  const built = target.startsWith('./dist/') ? target.replace('./dist/', './src/').replace(/\.d\.ts$|\.js$/, '.ts') : target;
  const source = condition === 'compiled' ? built.replace(/\.js$/, '.ts') : built;
  if (!source.includes('*')) return existsSync(join(packageDir, source));
  const folder = join(packageDir, dirname(source));
  return existsSync(folder) && readdirSync(folder).some((name) => name.endsWith('.ts'));
}

describe("every package's exports", () => {
  it.each(workspaces)('%s names only files that exist', (workspace) => {
    const packageDir = join(root, workspace);
    const { exports } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
    const targets = targetsOf(exports);
    expect(targets.length).toBeGreaterThan(0);
    expect(targets.filter(({ target, condition }) => !exists(target, condition, packageDir))).toEqual([]);
  });
});
