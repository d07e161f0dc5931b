import { describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { useStack } from '../../../testing/fixture.ts';
import type { StrategiesDatabase } from '../src/repository.ts';

const t = useStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50' }, accounts: [] });

describe('strategy events (transactional outbox)', () => {
  it('reports each change once, as the API shows the strategy, and nothing for a refused or no-op change', async () => {
    const client = await t.newAccount('Outbox');
    const strategy = await client.createdStrategy('Mean reversion', 'pairs');
    const taken = await client.createStrategy({ name: 'MEAN REVERSION' });
    expect(taken.error!.code).toBe('STRATEGY_NAME_TAKEN');
    const paused = await client.changeStrategyStatus('pauseStrategy', strategy.id);
    expect((await client.changeStrategyStatus('pauseStrategy', strategy.id)).error).toBeNull();
    const unchanged = await client.updateStrategy(strategy.id, { name: 'Mean reversion' });
    expect(unchanged.error).toBeNull();
    const archived = await client.changeStrategyStatus('archiveStrategy', strategy.id);
    expect(archived.error?.code ?? null).toBeNull();
    const refused = await client.changeStrategyStatus('resumeStrategy', strategy.id);
    expect(refused.error?.code).toBe('INVALID_STATUS_TRANSITION');

    const all = await client.allEvents(['strategies']);
    expect(all.map((event) => event.type)).toEqual(['strategy.created', 'strategy.paused', 'strategy.archived']);
    expect(all[0]!.data).toEqual({ ...strategy });
    expect(all[1]!.data).toEqual({ ...paused.strategy });
    expect(all[2]!.data).toEqual({ ...archived.strategy });
    expect(all.map((event) => event.occurredAt)).toEqual([strategy.updatedAt, paused.strategy!.updatedAt, archived.strategy!.updatedAt]);

    // Relayed rows leave the outbox.
    const db = createDatabase<StrategiesDatabase>({ url: t.stack.databaseUrl, schema: 'strategies', applicationName: 'strategies-test' });
    try {
      expect(await db.selectFrom('outbox').select('id').where('account_id', '=', client.accountId).execute()).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});
