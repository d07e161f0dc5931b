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
import { Decimal as DecimalJs } from 'decimal.js';
import { OtsClient } from '@ots/client';
import { isMainModule } from './main-module.ts';

/**
 * The API's decimals have up to 30 significant digits (20 before the point, 10 after), and their sums a
 * few more; decimal.js rounds every result to 20 by default.
 */
const Decimal = DecimalJs.clone({ precision: 64 });

/** What a `fill.recorded` event's data says that positions need: the fill, and its order's state after it. */
interface FillData {
  symbol: string;
  side: 'BUY' | 'SELL';
  quantity: string;
  orderSubmission: { strategyId: string | null };
}

/** Net quantity (bought minus sold) by strategy id, then symbol, as exact decimal strings. */
export type Positions = Record<string, Record<string, string>>;

/**
 * The net quantities the service's `Strategy.positions` shows, kept from the fills as they come: per
 * strategy and symbol, and in exact decimals (the quantities are decimal strings; as binary numbers,
 * 0.1 + 0.2 - 0.3 is not 0, and a bot would never see itself flat). A fill of an order without a
 * strategy counts in no position, as in the service.
 */
export class PositionBook {
  readonly positions: Positions;

  constructor(positions: Positions = {}) {
    this.positions = positions;
  }

  apply(fill: FillData): void {
    const { strategyId } = fill.orderSubmission;
    if (strategyId === null) return;
    const strategy = (this.positions[strategyId] ??= {});
    const quantity = new Decimal(fill.quantity);
    strategy[fill.symbol] = new Decimal(strategy[fill.symbol] ?? '0').plus(fill.side === 'BUY' ? quantity : quantity.negated()).toFixed();
  }
}

/** What the bot keeps between runs: its positions, and the cursor of the last fill they count (none yet: start from now). */
interface BotState {
  cursor: string | undefined;
  book: PositionBook;
}

function loadState(file: string): BotState {
  if (!existsSync(file)) return { cursor: undefined, book: new PositionBook() };
  const saved = JSON.parse(readFileSync(file, 'utf8')) as { cursor: string; positions: Positions };
  return { cursor: saved.cursor, book: new PositionBook(saved.positions) };
}

/**
 * Writes the positions and their cursor as one file, replaced by a rename: a crash leaves the previous
 * state or this one, never a cursor without the fills it counts (or the reverse).
 */
function saveState(file: string, state: BotState): void {
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, JSON.stringify({ cursor: state.cursor, positions: state.book.positions }), { flush: true });
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
    onFill: (book) => console.log(JSON.stringify(book.positions)),
    signal: stop.signal,
  });
}
