import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A Postgres server URL whose user may create databases; each stack gets a fresh database on it. */
    postgresUrl: string;
    redisUrl: string;
  }
}

const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

// Any image honouring the official images' interface (POSTGRES_USER/PASSWORD/DB; redis-server on
// the PATH) will do: CI builds its own from Debian packages since it reaches no image registry.
const POSTGRES_IMAGE = process.env.TEST_POSTGRES_IMAGE ?? 'postgres:15-alpine';
const REDIS_IMAGE = process.env.TEST_REDIS_IMAGE ?? 'redis:7-alpine';

/** Why no container runtime can be used, or undefined when one answers. */
async function containerRuntimeUnavailable(): Promise<string | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5_000)),
    ]);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

async function startContainers(needs: { postgres: boolean; redis: boolean }) {
  const { GenericContainer, Wait } = await import('testcontainers');
  const stops: (() => Promise<unknown>)[] = [];
  const urls: { postgres?: string; redis?: string } = {};
  try {
    if (needs.postgres) {
      // Readiness by a TCP connection from inside: the official image's first server, which
      // initialises the database, listens on its Unix socket only.
      const container = await new GenericContainer(POSTGRES_IMAGE)
        .withEnvironment({ POSTGRES_USER: 'test', POSTGRES_PASSWORD: 'test', POSTGRES_DB: 'test' })
        .withCommand(['postgres', '-c', 'fsync=off', '-c', 'autovacuum=off'])
        .withExposedPorts(5432)
        .withWaitStrategy(Wait.forSuccessfulCommand('pg_isready -h 127.0.0.1 -U test -d test'))
        .withStartupTimeout(120_000)
        .start();
      stops.push(() => container.stop());
      urls.postgres = `postgres://test:test@${container.getHost()}:${container.getMappedPort(5432)}/test`;
    }
    if (needs.redis) {
      const container = await new GenericContainer(REDIS_IMAGE)
        .withCommand(['redis-server', '--bind', '0.0.0.0', '--protected-mode', 'no', '--save', '', '--appendonly', 'no'])
        .withExposedPorts(6379)
        .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
        .start();
      stops.push(() => container.stop());
      urls.redis = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
    }
  } catch (error) {
    for (const stop of stops) await stop().catch(() => undefined);
    throw error;
  }
  return { urls, stops };
}

/**
 * Where the tests' Postgres and Redis come from, in order: URLs in the environment, containers when
 * a container runtime answers, else the servers on this machine. Each choice is printed, with the
 * reason when containers were wanted but not used, so that a run that silently lost its
 * containers is visible in its log.
 */
export default async function setup(project: TestProject) {
  let postgresUrl = process.env.TEST_DATABASE_URL;
  let redisUrl = process.env.TEST_REDIS_URL;
  let stops: (() => Promise<unknown>)[] = [];
  if (!postgresUrl || !redisUrl) {
    const unavailable = await containerRuntimeUnavailable();
    if (unavailable) {
      console.warn(`[test set-up] no container runtime (${unavailable}); using the local servers`);
    } else {
      try {
        const started = await startContainers({ postgres: !postgresUrl, redis: !redisUrl });
        stops = started.stops;
        postgresUrl ??= started.urls.postgres;
        redisUrl ??= started.urls.redis;
        console.log(`[test set-up] containers: ${[!process.env.TEST_DATABASE_URL && POSTGRES_IMAGE, !process.env.TEST_REDIS_URL && REDIS_IMAGE].filter(Boolean).join(', ')}`);
      } catch (error) {
        console.warn(`[test set-up] the container runtime answers but a container did not start (${error instanceof Error ? error.message : String(error)}); using the local servers`);
      }
    }
  }
  project.provide('postgresUrl', postgresUrl ?? LOCAL_POSTGRES);
  project.provide('redisUrl', redisUrl ?? LOCAL_REDIS);
  return async () => {
    for (const stop of stops) await stop();
  };
}
