import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OtsClient } from '@ots/client';
import { startNodeProcess, type StartedProcess } from '@ots/shared/testing/processes';
import { useStack } from '../../testing/fixture.ts';

/** examples/fills-bot.ts against the real stack, run as its user runs it: a process, killed and started again. */
const t = useStack({ accounts: [] });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('the fills bot', () => {
  it('after being killed and started again (before its first fill, and between fills) has the positions of a bot that never stopped', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const baseUrl = new URL(t.stack.gatewayUrl).origin;
    const client = new OtsClient({ apiKey, baseUrl });
    const directory = mkdtempSync(join(tmpdir(), 'ots-fills-bot-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const start = (stateFile: string): StartedProcess => {
      const bot = startNodeProcess(['--import', 'tsx', 'examples/fills-bot.ts', join(directory, stateFile)], {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        OTS_API_KEY: apiKey,
        OTS_BASE_URL: baseUrl,
      });
      cleanups.push(() => bot.child.kill('SIGKILL'));
      return bot;
    };
    const kill = async (bot: StartedProcess) => {
      bot.child.kill('SIGKILL');
      await new Promise((resolve) => bot.child.once('exit', resolve));
    };
    // It prints its positions after each fill.
    const printed = (bot: StartedProcess) => bot.output.split('\n').filter((line) => line.startsWith('{'));
    const fillsHandled = (bot: StartedProcess) => printed(bot).length;
    const started = (stateFile: string) => expect.poll(() => existsSync(join(directory, stateFile)), { timeout: 20_000 }).toBe(true);

    const steady = start('steady.json');
    let restarted = start('restarted.json');
    await started('steady.json');
    await started('restarted.json');
    // Killed before its first fill: it resumes from the start it saved, not from a later "now".
    await kill(restarted);

    // In decimals: as binary numbers, 0.1 + 0.2 - 0.3 is not 0.
    const strategy = await client.strategies.create({ name: 'Bot' });
    const buy = await client.orders.submit({ strategyId: strategy.id, symbol: 'BOT', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '0.3' });
    const sell = await client.orders.submit({ strategyId: strategy.id, symbol: 'BOT', side: 'SELL', type: 'LIMIT', limitPrice: '12', quantity: '0.3' });
    const withoutStrategy = await client.orders.submit({ symbol: 'BOT', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '5' });
    await client.fills.record({ orderSubmissionId: buy.id, executionId: 'bot-1', quantity: '0.1', price: '10' });
    restarted = start('restarted.json');
    await expect.poll(() => fillsHandled(restarted), { timeout: 20_000 }).toBe(1);
    await client.fills.record({ orderSubmissionId: sell.id, executionId: 'bot-2', quantity: '0.3', price: '12' });
    await expect.poll(() => fillsHandled(restarted), { timeout: 20_000 }).toBe(2);

    // Killed between fills: it starts from its file alone, the positions it loads counting exactly the fills before its cursor.
    await kill(restarted);
    await client.fills.record({ orderSubmissionId: buy.id, executionId: 'bot-3', quantity: '0.2', price: '10' });
    restarted = start('restarted.json');
    await expect.poll(() => fillsHandled(restarted), { timeout: 20_000 }).toBe(1);
    // An order without a strategy counts in no position, as in the service's.
    await client.fills.record({ orderSubmissionId: withoutStrategy.id, executionId: 'bot-4', quantity: '5', price: '10' });
    await expect.poll(() => fillsHandled(restarted), { timeout: 20_000 }).toBe(2);
    await expect.poll(() => fillsHandled(steady), { timeout: 20_000 }).toBe(4);

    expect(JSON.parse(printed(steady).at(-1)!)).toEqual({ [strategy.id]: { BOT: '0' } });
    expect(printed(restarted).at(-1)).toBe(printed(steady).at(-1));
    expect(await client.strategies.positions(strategy.id)).toMatchObject([{ symbol: 'BOT', netQuantity: '0' }]);

    // Ctrl-C (or SIGTERM) while no fill comes ends it at once, cleanly.
    const stopped = new Promise<number | null>((resolve) => steady.child.once('exit', resolve));
    steady.child.kill('SIGTERM');
    await expect(Promise.race([stopped, new Promise((resolve) => setTimeout(() => resolve('still running'), 5_000))])).resolves.toBe(0);
  });
});
