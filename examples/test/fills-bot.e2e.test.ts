import { describe, expect, it } from 'vitest';
import { OtsClient } from '@ots/client';
import { useStack } from '../../testing/fixture.ts';
import { PositionBook, runFillsBot } from '../fills-bot.ts';

/** examples/fills-bot.ts against the real stack: positions from streamed fills, resumed from a saved cursor. */
const t = useStack({ accounts: [] });

describe('the fills bot', () => {
  it('keeps positions from the fills it streams, and after a restart from its cursor counts no fill twice', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const client = new OtsClient({ apiKey, baseUrl: new URL(t.stack.gatewayUrl).origin });
    const start = client.events.list();
    await start.toArray();
    let cursor = start.cursor;
    const book = new PositionBook();
    const buy = await client.orders.submit({ symbol: 'BOT', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '10' });
    const sell = await client.orders.submit({ symbol: 'BOT', side: 'SELL', type: 'LIMIT', limitPrice: '12', quantity: '4' });

    const run = async (fills: number) => {
      let applied = 0;
      const stop = new AbortController();
      await runFillsBot(client, book, {
        after: cursor,
        signal: stop.signal,
        saveCursor: (next) => {
          cursor = next;
          applied += 1;
          if (applied === fills) stop.abort();
        },
      });
    };

    const first = run(2);
    await client.fills.record({ orderSubmissionId: buy.id, executionId: 'bot-1', quantity: '6', price: '10' });
    await client.fills.record({ orderSubmissionId: sell.id, executionId: 'bot-2', quantity: '4', price: '12' });
    await first;
    expect(book.positions.get('BOT')).toEqual({ netQuantity: 2 });

    // Restarted from the saved cursor: only the fill recorded since is applied.
    await client.fills.record({ orderSubmissionId: buy.id, executionId: 'bot-3', quantity: '4', price: '10' });
    await run(1);
    expect(book.positions.get('BOT')).toEqual({ netQuantity: 6 });
  });
});
