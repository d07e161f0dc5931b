import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { newId, receiveId } from '@ots/shared/ids';
import { testScope } from '@ots/shared/testing/scope';
import { useSchemaDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';
import { createStrategy, updateStrategy } from '../src/operations.ts';
import type { StrategiesDatabase } from '../src/repository.ts';

const { db, url } = await useSchemaDatabase<StrategiesDatabase>({ schema: SCHEMA, migrations }, { applicationName: 'strategies-test', maxConnections: 4 });

async function created(accountId: string, name: string): Promise<string> {
  const strategy = await createStrategy(testScope(db, accountId), { name });
  if (!strategy.ok) throw new Error(strategy.error.message);
  return strategy.value.id;
}

describe('a rename caught in a deadlock', () => {
  it('is decided again, as if it had come second: STRATEGY_NAME_TAKEN, never an internal error', async () => {
    const accountId = newId();
    const renamed = await created(accountId, 'X');
    const holder = await created(accountId, 'Y');
    // Another writer changes "Y" and, before it commits, the renamed strategy: the rename to "Y" waits
    // in the name index for that writer, which waits for the rename's row lock. Postgres ends the
    // cycle after deadlock_timeout (1 s) by failing the rename, which waited first.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(`update ${SCHEMA}.strategies set description = 'held' where id = $1`, [holder]);
      const rename = updateStrategy(testScope(db, accountId), { id: receiveId(renamed), name: 'Y' }).catch((error: unknown) => error);
      await sleep(200);
      await other.query(`update ${SCHEMA}.strategies set description = 'also held' where id = $1`, [renamed]);
      await other.query('commit');
      expect(await rename).toMatchObject({ ok: false, error: { code: 'STRATEGY_NAME_TAKEN', field: 'name' } });
    } finally {
      await other.end();
    }
  });
});
