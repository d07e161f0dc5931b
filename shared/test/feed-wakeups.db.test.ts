import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { EVENTS_WAKE_CHANNEL } from '../src/event-feed.ts';
import { FeedWakeups } from '../src/feed-wakeups.ts';
import { createLogger } from '../src/logger.ts';
import { createTestDatabase } from '../src/testing/database.ts';
import { StallingRelay } from '../src/testing/stalling-relay.ts';

const database = await createTestDatabase();
afterAll(() => database.drop());

async function notify(accountId: string): Promise<void> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  await client.query('select pg_notify($1, $2)', [EVENTS_WAKE_CHANNEL, accountId]);
  await client.end();
}

/** Wake-ups listening through a relay that a test can stall. */
async function throughRelay() {
  const target = new URL(database.url);
  const relay = await new StallingRelay(new URL(`tcp://${target.hostname}:${target.port || 5432}`)).start();
  const relayed = new URL(database.url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String(relay.port);
  const wakeups = new FeedWakeups(relayed.toString(), createLogger('feed-wakeups-test', 'silent'), { checkEveryMs: 200, answerWithinMs: 300 });
  const counted = { wakes: 0 };
  wakeups.subscribe('account-1', () => (counted.wakes += 1));
  wakeups.start();
  // Listening: every stream looks again once.
  await expect.poll(() => counted.wakes, { timeout: 10_000 }).toBe(1);
  return { relay, wakeups, counted };
}

describe("the gateway's event wake-ups", () => {
  it('listen again when their connection stops answering without closing, as one whose idle flow a NAT dropped', async () => {
    const { relay, wakeups, counted } = await throughRelay();
    try {
      await notify('account-1');
      await expect.poll(() => counted.wakes, { timeout: 10_000 }).toBe(2);

      relay.stall();
      await notify('account-1');
      // The stalled connection delivers nothing; once found out, a new one listens and every stream looks again.
      await expect.poll(() => counted.wakes, { timeout: 10_000 }).toBe(3);
      await notify('account-1');
      await expect.poll(() => counted.wakes, { timeout: 10_000 }).toBe(4);
    } finally {
      await wakeups.close();
      await relay.close();
    }
  });

  it('connect again, however often the new connection is taken and not answered, until one answers', async () => {
    const { relay, wakeups, counted } = await throughRelay();
    try {
      relay.stall();
      relay.stallNew();
      // Several attempts, each taken by the wedged relay and given up on in time.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(counted.wakes).toBe(1);
      relay.relayNew();
      await expect.poll(() => counted.wakes, { timeout: 10_000 }).toBe(2);
      await notify('account-1');
      await expect.poll(() => counted.wakes, { timeout: 10_000 }).toBe(3);
    } finally {
      await wakeups.close();
      await relay.close();
    }
  });

  it('stop without waiting for a connection that stopped answering', async () => {
    const { relay, wakeups } = await throughRelay();
    relay.stall();
    const started = performance.now();
    await wakeups.close();
    expect(performance.now() - started).toBeLessThan(5_000);
    await relay.close();
  });
});
