import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CommonJS and ESM builds; Node (and so @apollo/gateway) loads the CommonJS one,
    // and two copies of graphql in one process refuse each other's schemas. Vite would pick the ESM one.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['shared/test/**/*.test.ts', 'gateway/test/**/*.test.ts', 'services/*/test/**/*.test.ts', 'console/test/**/*.test.ts'],
    globalSetup: ['shared/src/testing/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './shared/src/testing/summary-reporter.ts'],
  },
});
