import pg from 'pg';
import { expect, it } from 'vitest';
import { NO_RATE_LIMIT_ENV, useStack } from '../../testing/fixture.ts';

/**
 * `/readyz` says whether the database answers, not whether the request pool has a connection free:
 * an orchestrator takes a replica that fails its probe (3 s) out of service, and a burst that holds
 * every connection of every replica's pool would otherwise take them all out at once.
 */
const t = useStack({ accounts: ['alice'], env: NO_RATE_LIMIT_ENV });

it("answers /readyz at once while a burst holds every connection of the service's pool", async () => {
  const admin = new pg.Client({ connectionString: t.stack.databaseUrl });
  await admin.connect();
  const waiting = async () =>
    Number(
      (await admin.query<{ count: string }>(`select count(*) from pg_stat_activity where application_name = 'strategies' and wait_event_type = 'Lock'`)).rows[0]!
        .count,
    );
  const holder = new pg.Client({ connectionString: t.stack.databaseUrl });
  await holder.connect();
  await holder.query('begin');
  await holder.query('lock table strategies.strategies in access exclusive mode');
  // Each create takes a connection and waits on the lock: a dozen hold the whole pool (10) and queue.
  const burst = Array.from({ length: 12 }, (_, index) => t.alice.graphql(`mutation { createStrategy(input: { name: "Burst ${index}" }) { strategy { id } } }`));
  try {
    await expect.poll(waiting, { timeout: 10_000, interval: 50 }).toBe(10);
    const started = performance.now();
    const ready = await fetch(new URL('/readyz', t.stack.urls.strategies));
    expect(ready.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(2_000);
  } finally {
    await holder.query('rollback');
    await holder.end();
    await Promise.allSettled(burst);
    await admin.end();
  }
});
