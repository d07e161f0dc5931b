/**
 * A bot that keeps its positions from its fills as they happen: it streams `fill.recorded` events from
 * the cursor it saved last, applies each fill once, and saves the cursor after each, so a restart (or a
 * dropped connection, which the client resumes by itself) neither misses nor double-counts a fill.
 *
 *   OTS_API_KEY=svc_live_... node --import tsx examples/fills-bot.ts [cursor-file]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { OtsClient } from '@ots/client';

export interface Position {
  /** Bought minus sold. */
  netQuantity: number;
}

interface FillData {
  symbol: string;
  side: 'BUY' | 'SELL';
  quantity: string;
}

/** Net quantity per symbol. Plain numbers keep the example short; a real book would use a decimal type. */
export class PositionBook {
  readonly positions = new Map<string, Position>();

  apply(fill: FillData): void {
    const position = this.positions.get(fill.symbol) ?? { netQuantity: 0 };
    position.netQuantity += (fill.side === 'BUY' ? 1 : -1) * Number(fill.quantity);
    this.positions.set(fill.symbol, position);
  }
}

/**
 * Streams fills into `book` until `signal` aborts; `saveCursor` is called after each fill is applied.
 * Starts after `after` (a saved cursor), or from now.
 */
export async function runFillsBot(client: OtsClient, book: PositionBook, options: { after?: string; saveCursor: (cursor: string) => void; signal?: AbortSignal }) {
  const stream = client.events.stream({ filter: { types: ['fill.recorded'] }, after: options.after });
  for await (const event of stream) {
    book.apply(event.data as unknown as FillData);
    options.saveCursor(stream.cursor!);
    if (options.signal?.aborted) return;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (!process.env.OTS_API_KEY) {
    console.error('usage: OTS_API_KEY=svc_live_... [OTS_BASE_URL=http://127.0.0.1:4000] fills-bot.ts [cursor-file]');
    process.exit(2);
  }
  const cursorFile = process.argv[2] ?? '.fills-bot-cursor';
  const client = new OtsClient({ apiKey: process.env.OTS_API_KEY, baseUrl: process.env.OTS_BASE_URL });
  const book = new PositionBook();
  await runFillsBot(client, book, {
    after: existsSync(cursorFile) ? readFileSync(cursorFile, 'utf8').trim() : undefined,
    saveCursor: (cursor) => {
      writeFileSync(cursorFile, cursor);
      console.log(Object.fromEntries([...book.positions].map(([symbol, position]) => [symbol, position.netQuantity])));
    },
  });
}
