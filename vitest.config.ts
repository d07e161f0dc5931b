import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CommonJS and ESM builds; Node (and so @apollo/gateway) loads the CommonJS one,
    // and two copies of graphql in one process refuse each other's schemas. Vite would pick the ESM one.
    // The examples import @ots/client as its users do; the tests run them on its sources, built or not.
    alias: [
      { find: /^graphql$/, replacement: require.resolve('graphql') },
      { find: /^@ots\/client$/, replacement: new URL('./clients/typescript/src/index.ts', import.meta.url).pathname },
    ],
  },
  test: {
    include: ['shared/test/**/*.test.ts', 'gateway/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'console/test/**/*.test.ts', 'deploy/test/**/*.test.ts', 'clients/*/test/**/*.test.ts', 'examples/test/**/*.test.ts'],
    globalSetup: ['shared/src/testing/global-setup.ts', 'testing/admin-cli-bundle.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at a time on the 2-core machine (vitest's default is one less than the cores): most
    // end-to-end tests wait on polls, streams and child processes, so the suite takes about 11
    // minutes instead of 15.
    maxWorkers: 2,
    // Commit-ordered feeds hold back a row while any transaction older than it runs anywhere on the
    // Postgres server, and test files run side by side (some hold a transaction open on purpose), so
    // a poll for what a feed shows waits for the slowest neighbour, not for this file's own writes.
    expect: { poll: { timeout: 15_000 } },
    reporters: ['default', './shared/src/testing/summary-reporter.ts'],
  },
});
