import diagnostics from 'node:diagnostics_channel';
import pg from 'pg';
import { percentile } from './percentile.ts';
import { CANCEL, ORDER_INPUT, RECORD_FILL, SUBMIT, VIEWER, type Operation } from './write-requests.ts';

/**
 * What each write costs, one request at a time in the in-process stack of `npm run bench`: SQL
 * statements (round trips) per service and calls between services.
 */

type Send = (apiKey: string, query: string, variables?: Record<string, unknown>) => Promise<unknown>;

export interface PerRequestOptions {
  send: Send;
  apiKey: string;
  /** Port → service name, to attribute calls between services. */
  serviceOfPort: Map<string, string>;
}

function errorOf(body: unknown, root: string): string | undefined {
  const payload = (body as { data?: Record<string, { error?: { code: string } | null }> }).data?.[root];
  return payload?.error?.code;
}

let executionCounter = 0;
const run = Date.now().toString(36);

/** The client's state: the orders it submitted (to cancel) and the order it fills. */
interface Client {
  apiKey: string;
  submitted: string[];
  fillOrder: string;
}

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
          input: { orderSubmissionId: client.fillOrder, executionId: `bench-${run}-${executionCounter}`, quantity: '1', price: '187.25' },
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

interface Counters {
  statements: Map<string, number>;
  calls: Map<string, number>;
}

/**
 * Counts, while `body` runs, the SQL statements each pool sends (by its application_name: one per
 * service) and the HTTP requests each service receives from the others or from the gateway (every
 * outgoing call, fetch or undici's `request`, is announced on undici's `undici:request:create` channel).
 */
async function countingCalls<T>(serviceOfPort: Map<string, string>, body: () => Promise<T>): Promise<{ result: T; counters: Counters }> {
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

const OPERATIONS: readonly Operation[] = ['viewer', 'submitOrder', 'cancelOrderSubmission', 'recordFill'];

/**
 * Where a write's time goes, one request at a time through the in-process stack of `npm run bench`:
 * its p50 and the round trips it makes. Its latencies are not the contract's figures (the load runs
 * in the server's process); `scripts/bench-writes.ts` measures those as a client does.
 */
export async function runPerRequestCosts(options: PerRequestOptions): Promise<void> {
  const { send, apiKey, serviceOfPort } = options;
  const count = 50;
  console.log('per request, one at a time (in process): p50, SQL statements by pool, HTTP requests received by service');
  const solo: Client = { apiKey, submitted: [], fillOrder: await submit(send, apiKey, { ...ORDER_INPUT, quantity: String(count * 2 + 10) }) };
  for (let index = 0; index < 5; index += 1) for (const operation of OPERATIONS) {
    if (operation === 'cancelOrderSubmission') solo.submitted.push(await submit(send, apiKey));
    await requestOf(send, operation, solo)();
  }
  for (const operation of OPERATIONS) {
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
