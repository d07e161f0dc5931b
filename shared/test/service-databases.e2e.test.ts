import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import { freePort } from '@ots/shared/testing/ports';
import { runCommand, type Finished } from '@ots/shared/testing/processes';
import { ApiClient } from '../../testing/client.ts';
import { NO_RATE_LIMIT_ENV } from '../../testing/requests.ts';
import { startStack, type TestStack } from '../../testing/stack.ts';

/**
 * A subgraph's team may run its own database server (contract section 11): ORDERS_DATABASE_URL
 * takes the orders service and its migrations there, while the others stay on DATABASE_URL's.
 * Two databases on the test server stand for the two servers.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UNREACHABLE = 'postgres://postgres@127.0.0.1:1/never-reached';

async function schemasOf(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      `select nspname as name from pg_namespace where nspname in ('accounts', 'orders', 'strategies', 'fills', 'events') order by 1`,
    );
    return rows.map((row) => row.name);
  } finally {
    await client.end();
  }
}

async function count(url: string, sql: string, values: unknown[]): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(sql, values)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

describe('the orders service on a database of its own', () => {
  let ordersDatabase: TestDatabase;
  let stack: TestStack;
  let alice: ApiClient;

  beforeAll(async () => {
    ordersDatabase = await createTestDatabase();
    stack = await startStack({ redis: 'none', env: { ...NO_RATE_LIMIT_ENV, OUTBOX_RELAY_INTERVAL_MS: '50', ORDERS_DATABASE_URL: ordersDatabase.url } });
    alice = new ApiClient(stack, await stack.createAccountWithKey('Alice'));
  });
  afterAll(async () => {
    await stack?.close();
    await ordersDatabase?.drop();
  });

  it('migrates and keeps orders there, the other services on DATABASE_URL, and every path across them works', async () => {
    expect(await schemasOf(ordersDatabase.url)).toEqual(['orders']);
    expect(await schemasOf(stack.databaseUrl)).toEqual(['accounts', 'events', 'fills', 'strategies']);

    const order = await alice.submittedOrder({ clientOrderId: 'own-db-1', type: 'LIMIT', quantity: '10', limitPrice: '100.50' });
    // fills (on DATABASE_URL's database) applies the fill to the order (on its own) through the orders service.
    const fill = await alice.recordFill({ orderSubmissionId: order.id, executionId: 'own-db-exec-1', quantity: '4', price: '100' });
    expect(fill.error).toBeNull();
    expect((await alice.order(order.id))?.filledQuantity).toBe('4');
    // The orders outbox, on its own database, reaches the events service on the other.
    const events = await alice.waitForEvents(3);
    expect(events.map((event) => event.type).sort()).toEqual(['fill.recorded', 'order_submission.partially_filled', 'order_submission.submitted']);

    expect(await count(ordersDatabase.url, 'select count(*) as n from orders.order_submissions where client_order_id = $1', ['own-db-1'])).toBe(1);
    expect(await count(stack.databaseUrl, 'select count(*) as n from fills.fills where execution_id = $1', ['own-db-exec-1'])).toBe(1);
  });
});

async function run(args: string[], env: Record<string, string>): Promise<Finished> {
  return runCommand(process.execPath, args, { env });
}

describe("a subgraph team's one-shot migration and start command", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('`npm run migrate -- --service orders` migrates the orders schema alone, on ORDERS_DATABASE_URL, with no other secret', async () => {
    const result = await run(['--import', 'tsx', 'scripts/migrate.ts', '--service', 'orders'], {
      NODE_ENV: 'production',
      ORDERS_DATABASE_URL: database.url,
      DATABASE_URL: UNREACHABLE,
    });
    expect(result).toMatchObject({ code: 0, stdout: 'migrated schema orders\n', stderr: '' });
    expect(await schemasOf(database.url)).toEqual(['orders']);
  });

  it('names the variables a service without a database needs, and the services there are', async () => {
    expect(await run(['--import', 'tsx', 'scripts/migrate.ts', '--service', 'fills'], { ORDERS_DATABASE_URL: database.url })).toMatchObject({
      code: 1,
      stderr: 'fills: FILLS_DATABASE_URL or DATABASE_URL is required\n',
    });
    expect(await run(['--import', 'tsx', 'scripts/migrate.ts', '--service', 'trades'], {})).toMatchObject({
      code: 2,
      stderr: '--service takes one of accounts, orders, strategies, fills, events, got "trades"\n',
    });
  });

  it('the orders process starts in production with ORDERS_DATABASE_URL and no DATABASE_URL nor API_KEY_HMAC_SECRET, and is ready', async () => {
    await run(['--import', 'tsx', 'scripts/migrate.ts', '--service', 'orders'], { ORDERS_DATABASE_URL: database.url });
    const [port, metricsPort] = [await freePort(), await freePort()];
    const { publicKey } = await import('node:crypto').then(({ generateKeyPairSync }) => generateKeyPairSync('ed25519'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'services/orders/src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        ORDERS_DATABASE_URL: database.url,
        ORDERS_PORT: String(port),
        METRICS_PORT: String(metricsPort),
        ASSERTION_PUBLIC_KEY: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
        EVENTS_INGEST_SECRET: `whsec_${Buffer.alloc(32, 1).toString('base64')}`,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await expect
        .poll(async () => {
          expect(child.exitCode, stderr).toBeNull();
          return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status;
        })
        .toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
