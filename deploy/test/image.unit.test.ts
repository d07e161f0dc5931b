import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The production image's build, as the Dockerfile and CI's engine describe it. */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the Dockerfile', () => {
  it('builds on the Node release CI builds and tests the image with, pinned to its patch version', () => {
    const ciNode = /^NODE_VERSION=(\d+\.\d+\.\d+)$/m.exec(read('.ci/engine'))?.[1];
    const imageNode = /^ARG NODE_IMAGE=node:(\S+)-bookworm-slim$/m.exec(read('Dockerfile'))?.[1];
    expect(ciNode).toMatch(/^\d+\.\d+\.\d+$/);
    expect(imageNode).toBe(ciNode);
  });
});

describe('the production entry points, dist/<service>/main.js', () => {
  const PROCESSES = { gateway: 'gateway/src/main', accounts: 'services/accounts/src/main', orders: 'services/orders/src/main', strategies: 'services/strategies/src/main', fills: 'services/fills/src/main', events: 'services/events/src/main' };

  it.each(Object.entries(PROCESSES))('dist/%s/main.js loads the tracing preload, then the service', (service, main) => {
    const imports = [...read(`dist/${service}/main.js`).matchAll(/^await import\('\.\.\/\.\.\/(.+)\.js'\);$/gm)].map((match) => match[1]);
    // The preload registers the module hooks: it is imported alone and first, the service only once it is done.
    expect(imports).toEqual(['shared/src/tracing-preload', main]);
    expect(() => read(`${main}.ts`)).not.toThrow();
  });

  it('the image runs the gateway by its entry point', () => {
    expect(read('Dockerfile')).toMatch(/^CMD \["node", "dist\/gateway\/main\.js"\]$/m);
  });
});
