import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '@ots/shared/config';
import { SERVICE_NAMES } from '@ots/shared/config';
import { freePort } from '@ots/shared/testing/ports';

export interface ServerProcess {
  gatewayUrl: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Ports of their own for the gateway and each subgraph, and the environment that puts a bench's
 * server processes on them and on the bench's database, with the rate limit out of the way.
 */
export async function benchServerEnv(config: Config): Promise<{ ports: Record<string, number>; env: NodeJS.ProcessEnv }> {
  const ports: Record<string, number> = {};
  for (const name of [...SERVICE_NAMES, 'gateway']) ports[name] = await freePort();
  return {
    ports,
    env: {
      ...process.env,
      DATABASE_URL: config.databaseUrl,
      REDIS_KEY_PREFIX: config.redisKeyPrefix,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '1000000',
      ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [`${name.toUpperCase()}_PORT`, String(port)])),
    },
  };
}

/**
 * `npm start`'s layout (scripts/bench-server.ts: the gateway and the five subgraphs in one process)
 * in a process of its own, on the bench's database: the contract's speed figures are measured with
 * the load coming from another process, as any client's does, and not from the server's own event
 * loop.
 */
export async function startServerProcess(config: Config): Promise<ServerProcess> {
  const { ports, env } = await benchServerEnv(config);
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench-server.ts'], {
    env: { ...env, METRICS_PORT: String(await freePort()) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitReady(`http://127.0.0.1:${ports.gateway}/readyz`, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { gatewayUrl: `http://127.0.0.1:${ports.gateway}/graphql`, child, stop };
}

/** Waits until a bench server's `/readyz` answers 200; throws when the process exits first, or after 60 s. */
export async function waitReady(url: string, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`a bench server exited with ${child.exitCode}`);
    const ready = await fetch(url).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return;
    await sleep(100);
  }
  throw new Error(`${url} was not ready within 60 s`);
}
