/**
 * A bot that keeps its positions from its fills as they happen: it streams `fill.recorded` events from
 * where it stopped, applies each fill once, and after each saves its positions together with the
 * fill's cursor in one atomic write, so a restart (or a dropped connection, which the client resumes
 * by itself) neither misses nor double-counts a fill: the positions it loads are exactly those of the
 * fills before the cursor it resumes from.
 *
 *   OTS_API_KEY=svc_live_... node --import tsx examples/fills-bot.ts [state-file]
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { OtsClient } from '@ots/client';
import { isMainModule } from './main-module.ts';

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
  readonly positions: Map<string, Position>;

  constructor(positions: Record<string, Position> = {}) {
    this.positions = new Map(Object.entries(positions));
  }

  apply(fill: FillData): void {
    const position = this.positions.get(fill.symbol) ?? { netQuantity: 0 };
    position.netQuantity += (fill.side === 'BUY' ? 1 : -1) * Number(fill.quantity);
    this.positions.set(fill.symbol, position);
  }
}

/** What the bot keeps between runs: its positions, and the cursor of the last fill they count (none yet: start from now). */
interface BotState {
  cursor: string | undefined;
  book: PositionBook;
}

function loadState(file: string): BotState {
  if (!existsSync(file)) return { cursor: undefined, book: new PositionBook() };
  const saved = JSON.parse(readFileSync(file, 'utf8')) as { cursor: string; positions: Record<string, Position> };
  return { cursor: saved.cursor, book: new PositionBook(saved.positions) };
}

/**
 * Writes the positions and their cursor as one file, replaced by a rename: a crash leaves the previous
 * state or this one, never a cursor without the fills it counts (or the reverse).
 */
function saveState(file: string, state: BotState): void {
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, JSON.stringify({ cursor: state.cursor, positions: Object.fromEntries(state.book.positions) }), { flush: true });
  renameSync(temporary, file);
}

/**
 * Streams fills into the state kept in `stateFile`, saving it after each fill; `onFill` is called once
 * it is saved.
 */
export async function runFillsBot(client: OtsClient, stateFile: string, options: { onFill?: (book: PositionBook) => void; signal?: AbortSignal } = {}) {
  const state = loadState(stateFile);
  if (state.cursor === undefined) {
    // The first time, the feed's end now (a filter that matches nothing reads no events), saved before
    // streaming: a restart before the first fill then resumes from here, not from a later "now".
    const start = client.events.list({ filter: { types: [] }, pageSize: 1 });
    await start.toArray();
    state.cursor = start.cursor;
    saveState(stateFile, state);
  }
  // Aborting `signal` ends the loop at once, between fills or while none comes.
  const stream = client.events.stream({ filter: { types: ['fill.recorded'] }, after: state.cursor, signal: options.signal });
  for await (const event of stream) {
    state.book.apply(event.data as unknown as FillData);
    state.cursor = stream.cursor!;
    saveState(stateFile, state);
    options.onFill?.(state.book);
  }
}

if (isMainModule(import.meta.url)) {
  if (!process.env.OTS_API_KEY) {
    console.error('usage: OTS_API_KEY=svc_live_... [OTS_BASE_URL=http://127.0.0.1:4000] fills-bot.ts [state-file]');
    process.exit(2);
  }
  const client = new OtsClient({ apiKey: process.env.OTS_API_KEY, baseUrl: process.env.OTS_BASE_URL });
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
  await runFillsBot(client, process.argv[2] ?? '.fills-bot-state.json', {
    onFill: (book) => console.log(Object.fromEntries([...book.positions].map(([symbol, position]) => [symbol, position.netQuantity]))),
    signal: stop.signal,
  });
}
