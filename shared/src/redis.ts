import { Redis } from 'ioredis';
import type { Logger } from './logger.ts';

/**
 * A Redis client that fails fast instead of queueing while disconnected: callers fall back to
 * Postgres, so a Redis outage costs latency, never a request.
 */
export function createRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 250,
    connectTimeout: 1_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    lazyConnect: false,
  });
  let reported = false;
  redis.on('error', (error) => {
    if (!reported) log.warn({ err: error }, 'redis unavailable; continuing without it');
    reported = true;
  });
  redis.on('ready', () => {
    reported = false;
  });
  return redis;
}

export async function isRedisReachable(redis: Redis | undefined): Promise<boolean> {
  if (!redis) return true;
  try {
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  }
}
