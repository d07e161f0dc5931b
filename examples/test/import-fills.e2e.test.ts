import { describe, expect, it } from 'vitest';
import { OtsClient } from '@ots/client';
import { useStack } from '../../testing/fixture.ts';
import { importFills } from '../import-fills.ts';

/** examples/import-fills.ts against the real stack: safe to run twice on one file. */
const t = useStack({ accounts: [] });

describe('the CSV fill importer', () => {
  it('records each row once, reports refused rows, and records nothing new when run again', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const client = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
    const a = await client.orders.submit({ symbol: 'CSV', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '10' });
    const b = await client.orders.submit({ symbol: 'CSV', side: 'SELL', type: 'LIMIT', limitPrice: '11', quantity: '5' });
    const csv = [
      'executionId,orderSubmissionId,quantity,price,fee,liquidity,executedAt',
      `ex-1,${a.id},4,10,0.01,MAKER,2026-01-02T10:00:00.000Z`,
      `ex-2,${a.id},6,9.5,0.01,TAKER,2026-01-02T10:00:01.000Z`,
      `ex-3,${b.id},5,11,,,2026-01-02T10:00:02.000Z`,
      'ex-4,00000000-0000-4000-8000-000000000000,1,1,,,2026-01-02T10:00:03.000Z',
    ].join('\n');

    const first = await importFills(client, csv);
    expect(first).toMatchObject({ recorded: 3, alreadyRecorded: 0 });
    expect(first.refused).toEqual([expect.objectContaining({ line: 5, executionId: 'ex-4', code: 'NOT_FOUND' })]);

    const second = await importFills(client, csv);
    expect(second).toMatchObject({ recorded: 0, alreadyRecorded: 3 });
    expect(second.refused).toHaveLength(1);

    expect((await client.fills.list().toArray()).map((fill) => fill.executionId).sort()).toEqual(['ex-1', 'ex-2', 'ex-3']);
    expect(await client.orders.get(a.id)).toMatchObject({ status: 'FILLED', filledQuantity: '10' });
    expect(await client.orders.get(b.id)).toMatchObject({ status: 'FILLED', filledQuantity: '5' });
  });
});
