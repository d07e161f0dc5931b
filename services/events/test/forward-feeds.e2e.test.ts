import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../../testing/client.ts';
import { useStack } from '../../../testing/fixture.ts';

const t = useStack({ redis: 'none', env: { OUTBOX_RELAY_INTERVAL_MS: '50' }, accounts: ['alice', 'bob'] });

const EVENTS = `query ($after: String) { listEvents(first: 3, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }`;
const SYNC = `query ($after: String) {
  listOrderSubmissions(orderBy: UPDATED_AT_ASC, first: 3, after: $after) { nodes { id status } pageInfo { hasNextPage endCursor } }
}`;

/** The naive polling loop on one list: each poll sends the endCursor of the one before and keeps what it read. */
function naivePoller(client: ApiClient, query: string, list: string, keyOf: (node: { id: string; status?: string }) => string) {
  let after: string | null = null;
  const seen: string[] = [];
  const poll = async (): Promise<number> => {
    const page = (await client.data(query, { after }))[list];
    expect(page.pageInfo.endCursor, 'a forward feed never answers a null endCursor').toEqual(expect.any(String));
    after = page.pageInfo.endCursor;
    seen.push(...page.nodes.map(keyOf));
    return page.nodes.length;
  };
  return { poll, seen };
}

describe('the naive polling loop (after = pageInfo.endCursor, always)', () => {
  it('on listEvents reads every event once, and an empty poll keeps its place instead of going back to the start', async () => {
    const client = await t.newAccount('Poller');
    const { poll, seen } = naivePoller(client, EVENTS, 'listEvents', (node) => node.id);

    // An account with no events at all: the first poll already names a place.
    expect(await poll()).toBe(0);
    for (const name of ['A', 'B', 'C', 'D', 'E']) await client.createdStrategy(name);
    await expect.poll(async () => (await poll(), seen.length)).toBe(5);
    // Quiet polls: nothing is read again.
    for (let i = 0; i < 3; i += 1) expect(await poll()).toBe(0);
    await client.createdStrategy('F');
    await expect.poll(async () => (await poll(), seen.length)).toBe(6);
    expect(await poll()).toBe(0);
    expect(new Set(seen).size).toBe(6);
    expect(seen).toEqual((await client.listEvents({ first: 200 })).nodes.map((node) => node.id));
  });

  it('on the UPDATED_AT_ASC sync reads every change once, and an empty poll keeps its place', async () => {
    const client = await t.newAccount('Syncer');
    const { poll, seen } = naivePoller(client, SYNC, 'listOrderSubmissions', (node) => `${node.id}:${node.status}`);
    expect(await poll()).toBe(0);
    const orders = [await client.submittedOrder(), await client.submittedOrder(), await client.submittedOrder(), await client.submittedOrder()];
    await expect.poll(async () => (await poll(), seen.length)).toBe(4);
    expect(await poll()).toBe(0);
    expect(await poll()).toBe(0);
    await client.cancelOrder(orders[1]!.id);
    await expect.poll(async () => (await poll(), seen.length)).toBe(5);
    expect(seen.at(-1)).toBe(`${orders[1]!.id}:CANCELLED`);
    expect(await poll()).toBe(0);
    expect(seen).toHaveLength(5);
  });
});

describe('event cursors', () => {
  it('are opaque: nothing of the feed position reads in the clear, and another account cannot use one', async () => {
    await t.alice.createdStrategy('Opaque');
    const [event] = await t.alice.waitForEvents(1);
    const page = await t.alice.listEvents({ first: 1 });
    const cursor = page.edges[0]!.cursor;
    expect(page.nodes[0]!.id).toBe(event!.id);
    const decoded = Buffer.from(cursor, 'base64url');
    expect(decoded.toString('latin1')).not.toContain(event!.id.slice(0, 8));
    // The position is the event's commit transaction id: neither its digits nor its bytes are there.
    const database = new pg.Client({ connectionString: t.stack.databaseUrl });
    await database.connect();
    const { rows } = await database.query<{ xid: string }>('select commit_xid::text as xid from events.events where id = $1', [event!.id]);
    await database.end();
    const xid = BigInt(rows[0]!.xid);
    const xidBytes = Buffer.alloc(8);
    xidBytes.writeBigUInt64BE(xid);
    expect(decoded.toString('latin1')).not.toContain(String(xid));
    expect(decoded.includes(xidBytes.subarray(xidBytes.findIndex((byte) => byte !== 0)))).toBe(false);
    expect(cursor).not.toMatch(/=|\+|\//);

    const foreign = await t.stack.graphql(t.bob.apiKey, EVENTS, { after: cursor });
    expect(foreign.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const edited = cursor.slice(0, 20) + (cursor[20] === 'A' ? 'B' : 'A') + cursor.slice(21);
    const refused = await t.stack.graphql(t.alice.apiKey, EVENTS, { after: edited });
    expect(refused.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    // The same position stays usable: paging from the cursor continues after the event.
    const next = await t.stack.graphql(t.alice.apiKey, EVENTS, { after: cursor });
    expect(next.body.data.listEvents.nodes.map((node: { id: string }) => node.id)).not.toContain(event!.id);
  });
});
