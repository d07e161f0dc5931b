import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OtsClient } from '@ots/client';
import { runCommand } from '@ots/shared/testing/processes';
import { useStack } from '../../testing/fixture.ts';
import { importFills, type ImportReport } from '../import-fills.ts';

/** examples/import-fills.ts against the real stack: safe to run twice on one file. */
const t = useStack({ accounts: [] });

async function newClient(): Promise<OtsClient> {
  const { apiKey } = await t.stack.createAccountWithKey();
  return new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
}

describe('the CSV fill importer', () => {
  it('records each row once, reports refused rows (malformed ones too) while importing the others, and records nothing new when run again', async () => {
    const client = await newClient();
    const a = await client.orders.submit({ symbol: 'CSV', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '10' });
    const b = await client.orders.submit({ symbol: 'CSV', side: 'SELL', type: 'LIMIT', limitPrice: '11', quantity: '5' });
    const csv = [
      'executionId,orderSubmissionId,quantity,price,fee,liquidity,executedAt',
      `ex-1,${a.id},4,10,0.01,MAKER,2026-01-02T10:00:00.000Z`,
      `ex-bad-price,${a.id},1,ten,,,2026-01-02T10:00:00.500Z`,
      `ex-2,${a.id},6,9.5,0.01,TAKER,2026-01-02T10:00:01.000Z`,
      `ex-bad-liquidity,${b.id},1,11,,maker,2026-01-02T10:00:01.500Z`,
      `ex-3,${b.id},5,11,,,2026-01-02T10:00:02.000Z`,
      'ex-4,00000000-0000-4000-8000-000000000000,1,1,,,2026-01-02T10:00:03.000Z',
      // The same execution twice in one file: recorded by its first row.
      `ex-1,${a.id},4,10,0.01,MAKER,2026-01-02T10:00:00.000Z`,
    ].join('\n');

    const first = await importFills(client, csv);
    expect(first).toMatchObject({ recorded: 3, alreadyRecorded: 1 });
    expect(first.refused).toEqual([
      expect.objectContaining({ line: 3, executionId: 'ex-bad-price', code: 'BAD_USER_INPUT' }),
      expect.objectContaining({ line: 5, executionId: 'ex-bad-liquidity', code: 'BAD_USER_INPUT' }),
      expect.objectContaining({ line: 7, executionId: 'ex-4', code: 'NOT_FOUND' }),
    ]);

    const second = await importFills(client, csv);
    expect(second).toMatchObject({ recorded: 0, alreadyRecorded: 4 });
    expect(second.refused.map((refusal) => refusal.executionId)).toEqual(['ex-bad-price', 'ex-bad-liquidity', 'ex-4']);

    expect((await client.fills.list().toArray()).map((fill) => fill.executionId).sort()).toEqual(['ex-1', 'ex-2', 'ex-3']);
    expect(await client.orders.get(a.id)).toMatchObject({ status: 'FILLED', filledQuantity: '10' });
    expect(await client.orders.get(b.id)).toMatchObject({ status: 'FILLED', filledQuantity: '5' });
  });

  it("tells recorded from already recorded whatever the importing machine's clock says", async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const baseUrl = new URL(t.stack.gatewayUrl).origin;
    const client = new OtsClient({ apiKey, baseUrl });
    const order = await client.orders.submit({ symbol: 'CLK', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '10' });
    const directory = mkdtempSync(join(tmpdir(), 'ots-import-fills-'));
    try {
      const file = join(directory, 'fills.csv');
      writeFileSync(file, ['executionId,orderSubmissionId,quantity,price', `clk-1,${order.id},4,10`, `clk-2,${order.id},6,10`].join('\n'));
      /** The importer as its user runs it, on a machine whose clock is `offsetMs` off. */
      const importWithClockOff = async (offsetMs: number): Promise<ImportReport> => {
        const clock = `const RealDate = Date; globalThis.Date = class extends RealDate { constructor(...args) { super(...(args.length ? args : [RealDate.now() + ${offsetMs}])); } static now() { return RealDate.now() + ${offsetMs}; } };`;
        const run = await runCommand(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(clock)}`, '--import', 'tsx', 'examples/import-fills.ts', file], {
          env: { OTS_API_KEY: apiKey, OTS_BASE_URL: baseUrl },
        });
        expect(run).toMatchObject({ code: 0 });
        return JSON.parse(run.stdout) as ImportReport;
      };

      // An hour ahead: the fills it records are stamped by the service's clock, "before" the importer's.
      expect(await importWithClockOff(3_600_000)).toEqual({ recorded: 2, alreadyRecorded: 0, refused: [] });
      // An hour behind: the fills an earlier run recorded look "after" this run's start.
      expect(await importWithClockOff(-3_600_000)).toEqual({ recorded: 0, alreadyRecorded: 2, refused: [] });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
