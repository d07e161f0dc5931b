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
