import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import type { StrategiesDatabase } from '../src/repository.ts';
import { waitForEvents } from '../../../testing/events.ts';
import { changeStatus, createStrategy, data, PAYLOAD_ERROR_FIELDS } from './support.ts';

let stack: TestStack;

beforeAll(async () => {
  stack = await startStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50' } });
});

afterAll(async () => {
  await stack?.close();
});

describe('strategy events (transactional outbox)', () => {
  it('reports each change once, as the API shows the strategy, and nothing for a refused or no-op change', async () => {
    const client = await stack.createAccountWithKey('Outbox');
    const strategy = await createStrategy(stack, client.apiKey, 'Mean reversion', 'pairs');
    const taken = await data(stack, client.apiKey, `mutation { createStrategy(input: { name: "MEAN REVERSION" }) { strategy { id } ${PAYLOAD_ERROR_FIELDS} } }`);
    expect(taken.createStrategy.error.code).toBe('STRATEGY_NAME_TAKEN');
    const paused = await changeStatus(stack, client.apiKey, 'pauseStrategy', strategy.id);
    expect((await changeStatus(stack, client.apiKey, 'pauseStrategy', strategy.id)).error).toBeNull();
    const unchanged = await data(stack, client.apiKey, `mutation ($id: ID!) { updateStrategy(id: $id, input: { name: "Mean reversion" }) { strategy { id } ${PAYLOAD_ERROR_FIELDS} } }`, {
      id: strategy.id,
    });
    expect(unchanged.updateStrategy.error).toBeNull();
    const archived = await changeStatus(stack, client.apiKey, 'archiveStrategy', strategy.id);
    expect(archived.error?.code ?? null).toBeNull();
    const refused = await changeStatus(stack, client.apiKey, 'resumeStrategy', strategy.id);
    expect(refused.error?.code).toBe('INVALID_STATUS_TRANSITION');

    const events = await waitForEvents(stack, client, 3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const all = await waitForEvents(stack, client, 3);
    expect(all.map((event) => event.type)).toEqual(['strategy.created', 'strategy.paused', 'strategy.archived']);
    expect(events[0]!.data).toEqual({ ...strategy });
    expect(all[1]!.data).toEqual({ ...paused.strategy });
    expect(all[2]!.data).toEqual({ ...archived.strategy });
    expect(all.map((event) => event.occurredAt)).toEqual([strategy.updatedAt, paused.strategy!.updatedAt, archived.strategy!.updatedAt]);

    // Relayed rows leave the outbox.
    const db = createDatabase<StrategiesDatabase>({ url: stack.databaseUrl, schema: 'strategies', applicationName: 'strategies-test' });
    try {
      expect(await db.selectFrom('outbox').select('id').where('account_id', '=', client.accountId).execute()).toEqual([]);
    } finally {
      await db.destroy();
    }
  });
});
