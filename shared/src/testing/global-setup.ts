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

async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer')), 5_000)),
    ]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Where the tests' Postgres and Redis come from, in order: URLs in the environment, containers when
 * a container runtime answers, else the servers on this machine.
 */
export default async function setup(project: TestProject) {
  const fromEnv = {
    postgres: process.env.TEST_DATABASE_URL,
    redis: process.env.TEST_REDIS_URL,
  };
  const stops: (() => Promise<unknown>)[] = [];
  let postgresUrl = fromEnv.postgres;
  let redisUrl = fromEnv.redis;
  if ((!postgresUrl || !redisUrl) && (await containerRuntimeAvailable())) {
    if (!postgresUrl) {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer('postgres:15-alpine').start();
      stops.push(() => container.stop());
      postgresUrl = container.getConnectionUri();
    }
    if (!redisUrl) {
      const { RedisContainer } = await import('@testcontainers/redis');
      const container = await new RedisContainer('redis:7-alpine').start();
      stops.push(() => container.stop());
      redisUrl = container.getConnectionUrl();
    }
  }
  project.provide('postgresUrl', postgresUrl ?? LOCAL_POSTGRES);
  project.provide('redisUrl', redisUrl ?? LOCAL_REDIS);
  return async () => {
    for (const stop of stops) await stop();
  };
}
