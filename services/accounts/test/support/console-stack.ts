import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { startStack, type TestStack } from '../../../../testing/stack.ts';
import { baseOf } from './console-client.ts';

/** What the console's end-to-end tests run against; read inside a test or hook, once `beforeAll` has started it. */
export interface ConsoleStack {
  readonly stack: TestStack;
  /** The gateway's origin, where the console is served. */
  readonly base: string;
  /** A connection to the stack's database, to look at what the console keeps. */
  readonly db: pg.Client;
  /**
   * The origin of a second gateway on the same database whose console clock the test moves, behind a
   * trusted "proxy" (loopback) so tests choose client addresses.
   */
  readonly clockedBase: string;
  /** How far that gateway's console clock runs ahead of now; a test that moves it sets it back. */
  offsetMs: number;
  /** That gateway's console clock. */
  clock(): number;
  /** How many sessions the owner has. */
  cookieSessionCount(ownerId: string): Promise<number>;
}

/** Starts one stack and one clocked gateway for the test file (in `beforeAll`, closed in `afterAll`). Call it at the top of the file. */
export function useConsoleStack(): ConsoleStack {
  let stack: TestStack | undefined;
  let db: pg.Client | undefined;
  let clocked: RunningServer | undefined;
  const running = () => {
    if (!stack || !db || !clocked) throw new Error('the stack starts in beforeAll: read the fixture inside a test or a hook');
    return { stack, db, clocked };
  };
  const fixture: ConsoleStack = {
    get stack() {
      return running().stack;
    },
    get base() {
      return baseOf(running().stack.gatewayUrl);
    },
    get db() {
      return running().db;
    },
    get clockedBase() {
      return baseOf(running().clocked.url);
    },
    offsetMs: 0,
    clock: () => Date.now() + fixture.offsetMs,
    cookieSessionCount: async (ownerId) =>
      Number((await running().db.query('select count(*) from accounts.sessions where owner_id = $1', [ownerId])).rows[0].count),
  };

  beforeAll(async () => {
    stack = await startStack({ env: { FAILED_AUTH_BURST: '10000' } });
    db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    clocked = await stack.anotherGateway({ config: { trustProxy: ['loopback'] }, consoleClock: fixture.clock });
  });

  afterAll(async () => {
    await clocked?.close();
    await db?.end();
    await stack?.close();
  });

  return fixture;
}
