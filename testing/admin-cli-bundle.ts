import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The admin CLI's sources bundled into one file, which `runAdminCli` runs. */
    adminCliBundle: string;
  }
}

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Bundles the admin CLI's own sources (this run's, never a stale build) into one file, its packages
 * left to node_modules. The CLI's end-to-end tests run it about a hundred times, each a process of
 * its own: through tsx, whose loader hooks every one of its hundreds of modules, a run costs about
 * 1.5 s of CPU, bundled about 0.6 s. One test still runs `npm run admin` itself.
 */
export default async function bundleAdminCli(project: TestProject): Promise<() => void> {
  // Inside the checkout, so that the bundle's imports of packages resolve from its node_modules.
  const directory = `${ROOT}node_modules/.cache/ots-tests/${process.pid}`;
  mkdirSync(directory, { recursive: true });
  const outfile = `${directory}/admin-cli.mjs`;
  await build({
    entryPoints: [`${ROOT}services/accounts/src/cli.ts`],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    plugins: [
      {
        name: 'packages-stay-packages',
        // The workspace's own packages (@ots/…) are TypeScript sources, bundled; every other package is imported as installed.
        setup: (bundler) => bundler.onResolve({ filter: /^[^./]/ }, ({ path }) => (path.startsWith('@ots/') ? undefined : { path, external: true })),
      },
    ],
  });
  project.provide('adminCliBundle', outfile);
  return () => rmSync(directory, { recursive: true, force: true });
}
