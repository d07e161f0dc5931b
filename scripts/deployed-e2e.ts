/**
 * End-to-end checks against a deployed stack, as a client sees it through several gateway replicas:
 * `GATEWAY_URLS=http://h:4000/graphql,http://h:4001/graphql API_KEY=... node --import tsx scripts/deployed-e2e.ts`.
 * .ci/compose-e2e runs it against docker-compose.yml with two replicas of every service, where
 * each gateway reaches every replica of each subgraph. Each step alternates over the gateways; the
 * first failure is printed and the exit code is 1.
 */
import { randomBytes } from 'node:crypto';

const gateways = (process.env.GATEWAY_URLS ?? '').split(',').filter(Boolean);
const apiKey = process.env.API_KEY ?? '';
if (gateways.length === 0 || !apiKey) {
  console.error('set GATEWAY_URLS (comma-separated gateway URLs) and API_KEY');
  process.exit(2);
}

let turn = 0;
/** One GraphQL request to the next gateway in turn; the deployment's TLS proxy is stood in for by the header. */
async function graphql(query: string, variables: Record<string, unknown> = {}) {
  const url = gateways[turn++ % gateways.length]!;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'x-forwarded-proto': 'https' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
  if (response.status !== 200 || body.errors) throw new Error(`${url} answered ${response.status}: ${JSON.stringify(body)}`);
  return body.data!;
}

function check(condition: boolean, what: string, seen: unknown) {
  if (!condition) throw new Error(`${what}; saw ${JSON.stringify(seen)}`);
  console.log(`ok: ${what}`);
}

const ORDER = 'id clientOrderId status';
const SUBMIT = `mutation ($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { ${ORDER} } error { code message } } }`;
const CANCEL = `mutation ($id: ID!) { cancelOrderSubmission(id: $id) { orderSubmission { ${ORDER} } error { code message } } }`;
const READ = `query ($id: ID!) { orderSubmission(id: $id) { ${ORDER} } }`;
const EVENTS = `query ($filter: EventFilter, $after: String) { listEvents(filter: $filter, first: 100, after: $after) {
  nodes { id type data } pageInfo { hasNextPage endCursor } } }`;

interface Order {
  id: string;
  clientOrderId: string;
  status: string;
}

async function main() {
  const startedAt = new Date().toISOString();
  const viewers = await Promise.all(gateways.map(() => graphql('{ viewer { account { id } } }')));
  const accountIds = new Set(viewers.map((data) => JSON.stringify(data.viewer)));
  check(accountIds.size === 1, `every gateway knows the key (${gateways.length} gateways)`, viewers);

  // The same natural id through every gateway: one order, whichever replicas served the requests.
  const input = { clientOrderId: `e2e-${randomBytes(6).toString('hex')}`, symbol: 'E2E', side: 'BUY', type: 'LIMIT', quantity: '5', limitPrice: '10.5' };
  const submitted: unknown[] = [];
  for (let i = 0; i < 2 * gateways.length; i += 1) {
    const payload = (await graphql(SUBMIT, { input })).submitOrder as { orderSubmission: Order | null; error: unknown };
    submitted.push(payload.orderSubmission?.id ?? payload.error);
  }
  const orderId = submitted[0] as string;
  check(typeof orderId === 'string' && submitted.every((id) => id === orderId), 'a repeated clientOrderId returns the one order', submitted);

  const reads: string[] = [];
  for (let i = 0; i < 2 * gateways.length; i += 1) reads.push(((await graphql(READ, { id: orderId })).orderSubmission as Order).status);
  check(reads.every((status) => status === reads[0]), 'every replica reads the order alike', reads);

  const cancelled = (await graphql(CANCEL, { id: orderId })).cancelOrderSubmission as { orderSubmission: Order | null; error: unknown };
  check(cancelled.orderSubmission?.status === 'CANCELLED', 'the order is cancelled', cancelled);

  // The producers' outbox relays (two replicas each) deliver each event to events exactly once.
  const wanted = ['order_submission.submitted', 'order_submission.cancelled'];
  const deadline = Date.now() + 30_000;
  let ofOrder: { id: string; type: string }[] = [];
  while (Date.now() < deadline) {
    const nodes: { id: string; type: string; data: unknown }[] = [];
    let after: string | undefined;
    for (;;) {
      const page = (await graphql(EVENTS, { filter: { types: wanted, occurredAfter: startedAt }, after })).listEvents as {
        nodes: { id: string; type: string; data: unknown }[];
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
      };
      nodes.push(...page.nodes);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor ?? undefined;
    }
    ofOrder = nodes.filter((event) => JSON.stringify(event.data).includes(orderId));
    if (wanted.every((type) => ofOrder.some((event) => event.type === type))) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  check(
    ofOrder.length === wanted.length && wanted.every((type) => ofOrder.filter((event) => event.type === type).length === 1),
    'the feed holds each of the order\'s events once',
    ofOrder.map((event) => event.type),
  );
}

main().then(
  () => console.log('deployed end-to-end checks passed'),
  (error: unknown) => {
    console.error(`deployed end-to-end check failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
