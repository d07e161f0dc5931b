import diagnostics from 'node:diagnostics_channel';
import pg from 'pg';

/**
 * The write section of `npm run bench` (contract section 8): `viewer`, `submitOrder`,
 * `cancelOrderSubmission` and `recordFill`, each with 8 concurrent clients, the writes both from
 * one account and from 8 accounts, in interleaved rounds with a batch of `viewer` before each batch
 * of writes, so that machine noise falls on every figure alike; then, one request at a time, what
 * each costs: SQL statements (round trips) per service and calls between services.
 */

export type Send = (apiKey: string, query: string, variables?: Record<string, unknown>) => Promise<unknown>;

export interface WriteBenchOptions {
  send: Send;
  /** Keys of 8 different accounts; the first also plays the single account. */
  apiKeys: readonly string[];
  /** Port → service name, to attribute calls between services. */
  serviceOfPort: Map<string, string>;
  rounds?: number;
  requestsPerClient?: number;
}

const CLIENTS = 8;
/** The pause before each batch of requests: the outbox relays empty what the batch before left them. */
const SETTLE_MS = 100;

const SUBMIT = 'mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id } error { code } } }';
const CANCEL = 'mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { id status } error { code } } }';
const RECORD_FILL =
  'mutation ($input: RecordFillInput!) { recordFill(input: $input) { fill { id } orderSubmission { status filledQuantity } error { code } } }';
const VIEWER = '{ viewer { account { id name } apiKey { id displayPrefix } } }';

const ORDER_INPUT = { symbol: 'AAPL', side: 'BUY', type: 'LIMIT', quantity: '10', limitPrice: '187.25' };

function errorOf(body: unknown, root: string): string | undefined {
  const payload = (body as { data?: Record<string, { error?: { code: string } | null }> }).data?.[root];
  return payload?.error?.code;
}

let executionCounter = 0;

/** One client's state for a scenario: the orders it submitted (to cancel) and the order it fills. */
interface Client {
  apiKey: string;
  submitted: string[];
  fillOrder: string;
}

type Operation = 'viewer' | 'submitOrder' | 'cancelOrderSubmission' | 'recordFill';

async function submit(send: Send, apiKey: string, input: Record<string, unknown> = ORDER_INPUT): Promise<string> {
  const body = (await send(apiKey, SUBMIT, { input })) as { data: { submitOrder: { orderSubmission: { id: string } | null } } };
  const id = body.data.submitOrder.orderSubmission?.id;
  if (!id) throw new Error(`bench submitOrder refused: ${JSON.stringify(body)}`);
  return id;
}

function requestOf(send: Send, operation: Operation, client: Client): () => Promise<void> {
  switch (operation) {
    case 'viewer':
      return async () => void (await send(client.apiKey, VIEWER));
    case 'submitOrder':
      return async () => void client.submitted.push(await submit(send, client.apiKey));
    case 'cancelOrderSubmission':
      return async () => {
        const id = client.submitted.pop();
        if (!id) throw new Error('bench ran out of orders to cancel');
        const body = await send(client.apiKey, CANCEL, { id });
        if (errorOf(body, 'cancelOrderSubmission')) throw new Error(`bench cancel refused: ${JSON.stringify(body)}`);
      };
    case 'recordFill':
      return async () => {
        executionCounter += 1;
        const body = await send(client.apiKey, RECORD_FILL, {
          input: { orderSubmissionId: client.fillOrder, executionId: `bench-${process.pid}-${executionCounter}`, quantity: '1', price: '187.25' },
        });
        if (errorOf(body, 'recordFill')) throw new Error(`bench recordFill refused: ${JSON.stringify(body)}`);
      };
  }
}

/** Runs `count` requests on each client at once; returns each request's latency and the wall time. */
async function concurrently(clients: readonly Client[], count: number, request: (client: Client) => () => Promise<void>) {
  const samples: number[] = [];
  const started = process.hrtime.bigint();
  await Promise.all(
    clients.map(async (client) => {
      const run = request(client);
      for (let index = 0; index < count; index += 1) {
        const begun = process.hrtime.bigint();
        await run();
        samples.push(Number(process.hrtime.bigint() - begun) / 1e6);
      }
    }),
  );
  return { samples, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

const percentile = (samples: readonly number[], p: number) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

interface Counters {
  statements: Map<string, number>;
  calls: Map<string, number>;
}

/**
 * Counts, while `body` runs, the SQL statements each pool sends (by its application_name: one per
 * service) and the HTTP requests each service receives from the others or from the gateway (every
 * outgoing call, fetch or undici's `request`, is announced on undici's `undici:request:create` channel).
 */
export async function countingCalls<T>(serviceOfPort: Map<string, string>, body: () => Promise<T>): Promise<{ result: T; counters: Counters }> {
  const counters: Counters = { statements: new Map(), calls: new Map() };
  const originalQuery = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client & { connectionParameters?: { application_name?: string } }, ...args: unknown[]) {
    const name = this.connectionParameters?.application_name ?? 'other';
    counters.statements.set(name, (counters.statements.get(name) ?? 0) + 1);
    return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof originalQuery;
  const onRequest = (message: unknown) => {
    const { origin } = (message as { request: { origin: string } }).request;
    const service = serviceOfPort.get(new URL(origin).port);
    if (service) counters.calls.set(service, (counters.calls.get(service) ?? 0) + 1);
  };
  diagnostics.subscribe('undici:request:create', onRequest);
  try {
    return { result: await body(), counters };
  } finally {
    pg.Client.prototype.query = originalQuery;
    diagnostics.unsubscribe('undici:request:create', onRequest);
  }
}

const OPERATIONS: readonly Operation[] = ['submitOrder', 'cancelOrderSubmission', 'recordFill'];

export async function runWriteBench(options: WriteBenchOptions): Promise<void> {
  const { send, apiKeys, serviceOfPort } = options;
  const rounds = options.rounds ?? 8;
  const perClient = options.requestsPerClient ?? 20;
  if (apiKeys.length < CLIENTS) throw new Error(`the write bench needs ${CLIENTS} accounts`);
  // Fill orders big enough for every fill of the run: one per client and scenario, so clients never contend on a row.
  const fillQuantity = String(rounds * perClient + 100);
  const makeClients = async (keys: readonly string[]) =>
    Promise.all(
      keys.map(async (apiKey) => ({
        apiKey,
        submitted: [] as string[],
        fillOrder: await submit(send, apiKey, { ...ORDER_INPUT, quantity: fillQuantity }),
      })),
    );
  const scenarios = {
    'one account': await makeClients(Array.from({ length: CLIENTS }, () => apiKeys[0]!)),
    '8 accounts': await makeClients(apiKeys.slice(0, CLIENTS)),
  };
  // A burst of fills of one order (a large order executed in many parts): the one case where writes
  // may wait for each other, since they change the same row. Shown, not held to the target.
  const oneOrder = await submit(send, apiKeys[0]!, { ...ORDER_INPUT, quantity: String(CLIENTS * (rounds * perClient + 100)) });
  const burstClients = scenarios['one account'].map((client) => ({ ...client, fillOrder: oneOrder }));
  type Scenario = keyof typeof scenarios;
  const results = new Map<string, { samples: number[]; seconds: number; count: number }>();
  const add = (key: string, run: { samples: number[]; seconds: number }) => {
    const entry = results.get(key) ?? { samples: [], seconds: 0, count: 0 };
    entry.samples.push(...run.samples);
    entry.seconds += run.seconds;
    entry.count += run.samples.length;
    results.set(key, entry);
  };

  // Warm-up: connections, plans and JIT of every path.
  for (const clients of Object.values(scenarios)) {
    for (const operation of OPERATIONS) await concurrently(clients, 5, (client) => requestOf(send, operation, client));
  }
  await concurrently(burstClients, 5, (client) => requestOf(send, 'recordFill', client));

  // Each batch starts on a quiet stack, so that none pays for the events its predecessor left to relay.
  const settled = async <T>(run: () => Promise<T>): Promise<T> => {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    return run();
  };
  for (let round = 0; round < rounds; round += 1) {
    // Alternate which scenario goes first, so that neither always runs on a warmer (or fuller) machine.
    const order: Scenario[] = round % 2 === 0 ? ['one account', '8 accounts'] : ['8 accounts', 'one account'];
    for (const operation of OPERATIONS) {
      for (const scenario of order) {
        // viewer just before each batch of writes: the two meet the machine in the same state, however its speed drifts.
        add('viewer', await settled(() => concurrently(scenarios['one account'], perClient, (client) => requestOf(send, 'viewer', client))));
        add(`${operation}|${scenario}`, await settled(() => concurrently(scenarios[scenario], perClient, (client) => requestOf(send, operation, client))));
      }
    }
    add('recordFill|one order', await settled(() => concurrently(burstClients, perClient, (client) => requestOf(send, 'recordFill', client))));
  }

  const viewer = results.get('viewer')!;
  const viewerP50 = percentile(viewer.samples, 50);
  const line = (label: string, entry: { samples: number[]; seconds: number; count: number }, extra = '') =>
    console.log(
      `${label.padEnd(44)} p50 ${percentile(entry.samples, 50).toFixed(2).padStart(7)} ms   p99 ${percentile(entry.samples, 99)
        .toFixed(2)
        .padStart(7)} ms   ${(entry.count / entry.seconds).toFixed(0).padStart(5)}/s${extra}`,
    );
  console.log(
    `\nwrites, ${CLIENTS} concurrent clients, ${rounds} interleaved rounds of ${perClient} requests per client, viewer before each batch of writes (target: p50 ≤ 2× viewer, one account within 10% of 8)`,
  );
  line('viewer (8 clients)', viewer);
  for (const operation of OPERATIONS) {
    const one = results.get(`${operation}|one account`)!;
    const eight = results.get(`${operation}|8 accounts`)!;
    const oneP50 = percentile(one.samples, 50);
    const eightP50 = percentile(eight.samples, 50);
    line(`${operation}, one account`, one, `   ${(oneP50 / viewerP50).toFixed(2)}× viewer`);
    line(`${operation}, 8 accounts`, eight, `   ${(eightP50 / viewerP50).toFixed(2)}× viewer   one/8 accounts ${(oneP50 / eightP50).toFixed(2)}`);
  }
  const burst = results.get('recordFill|one order')!;
  line('recordFill, 8 clients filling one order', burst, `   ${(percentile(burst.samples, 50) / viewerP50).toFixed(2)}× viewer (writes of one order wait for each other)`);

  // Where a write's time goes: one request at a time, counting round trips.
  console.log('\nper request, one at a time: p50, SQL statements by pool, HTTP requests received by service');
  const solo = scenarios['8 accounts'][0]!;
  for (const operation of ['viewer', ...OPERATIONS] as Operation[]) {
    const count = 50;
    if (operation === 'cancelOrderSubmission') for (let index = 0; index < count; index += 1) solo.submitted.push(await submit(send, solo.apiKey));
    const { result, counters } = await countingCalls(serviceOfPort, () => concurrently([solo], count, (client) => requestOf(send, operation, client)));
    const perRequest = (map: Map<string, number>) =>
      [...map.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, total]) => `${name} ${(total / count).toFixed(1)}`)
        .join(', ');
    console.log(
      `  ${operation.padEnd(24)} p50 ${percentile(result.samples, 50).toFixed(2).padStart(6)} ms   SQL: ${perRequest(counters.statements)}   HTTP: ${perRequest(counters.calls)}`,
    );
  }
  console.log('');
}
