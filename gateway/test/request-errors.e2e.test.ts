import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@ots/shared/logger';
import { runService } from '@ots/shared/service';
import type { RunningServer } from '@ots/shared/subgraph-server';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import { strategiesService } from '@ots/strategies/service';
import { useStack } from '../../testing/fixture.ts';
import type { HttpResult } from '../../testing/stack.ts';

const t = useStack({ accounts: ['errs'] });
const json = { 'content-type': 'application/json' };
const VIEWER = '{ viewer { account { id } } }';

const post = (body: unknown, withKey = true) => t.stack.post(JSON.stringify(body), withKey ? { ...json, 'x-api-key': t.errs.apiKey } : json);

/** A 400 whose errors carry `code` and say what is wrong; never an internal error. */
function expectRefused(result: HttpResult, code: string, message: RegExp) {
  expect(result.status, JSON.stringify(result.body)).toBe(400);
  expect(result.body.data ?? null).toBeNull();
  expect(result.body.errors.length).toBeGreaterThanOrEqual(1);
  for (const error of result.body.errors) {
    expect(error.extensions.code).toBe(code);
    expect(error.message).toMatch(message);
  }
}

describe('mistakes in the request itself are 400s naming them', () => {
  it('variables that are not an object, an operationName that is not a string: data null beside the errors, as every top-level failure', async () => {
    for (const body of [{ query: VIEWER, variables: 'x' }, { query: VIEWER, variables: [1] }, { query: VIEWER, operationName: 7 }]) {
      const result = await post(body);
      expect(result.status, JSON.stringify(body)).toBe(400);
      expect(result.body).toMatchObject({ data: null, errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_REQUEST' }) })] });
    }
  });

  it('an operationName the document does not define', async () => {
    expectRefused(await post({ query: `query Mine ${VIEWER}`, operationName: 'Other' }), 'BAD_REQUEST', /Unknown operation named "Other"/);
  });

  it('several operations and no operationName, named or anonymous', async () => {
    const named = await post({ query: `query A ${VIEWER} query B { viewer { apiKey { id } } }` });
    expectRefused(named, 'BAD_REQUEST', /Must provide operation name/);
    const anonymous = await post({ query: `${VIEWER} { viewer { apiKey { id } } }` });
    expectRefused(anonymous, 'GRAPHQL_VALIDATION_FAILED', /anonymous operation must be the only defined operation/);
  });

  it('a subscription on POST /graphql, naming the two stream endpoints', async () => {
    for (const query of ['subscription { events { cursor } }', 'subscription Feed { events(after: null) { cursor event { id type } } }']) {
      const result = await post({ query });
      expectRefused(result, 'BAD_REQUEST', /\/graphql\/stream/);
      expect(result.body.errors[0].message).toContain('/graphql/ws');
    }
  });

  it('a persisted query extension, with or without the document, with or without a key', async () => {
    const persistedQuery = { version: 1, sha256Hash: 'a'.repeat(64) };
    for (const body of [{ extensions: { persistedQuery } }, { query: VIEWER, extensions: { persistedQuery } }]) {
      for (const withKey of [true, false]) {
        expectRefused(await post(body, withKey), 'PERSISTED_QUERY_NOT_SUPPORTED', /Persisted queries are not supported/);
      }
    }
  });
});

describe('a database outage says retry', () => {
  it('a subgraph whose Postgres is gone: its queries get the top-level code TEMPORARILY_UNAVAILABLE, its mutations the payload error, other subgraphs keep answering', async () => {
    const database = new URL(t.stack.databaseUrl);
    const proxy = new TcpProxy(database.hostname, Number(database.port || 5432));
    await proxy.start();
    database.hostname = '127.0.0.1';
    database.port = String(proxy.port);
    const logger = createLogger('outage', 'silent');
    const strategies = await runService(strategiesService, { config: { ...t.stack.config, databaseUrl: database.toString() }, port: 0, logger });
    let gateway: RunningServer | undefined;
    try {
      gateway = await t.stack.anotherGateway({ config: { subgraphUrls: { ...t.stack.config.subgraphUrls, strategies: strategies.url } }, logger });
      const ask = (query: string) => t.stack.post(JSON.stringify({ query }), { ...json, 'x-api-key': t.errs.apiKey }, gateway!.url);
      expect((await ask('{ listStrategies { nodes { id } } }')).body.errors).toBeUndefined();

      await proxy.cut();
      const read = await ask('{ viewer { account { id } } strategy(id: "01a20000-0000-7000-8000-000000000000") { id } }');
      expect(read.body.data.viewer.account.id).toBe(t.errs.accountId);
      expect(read.body.data.strategy).toBeNull();
      expect(read.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
        [['strategy'], 'TEMPORARILY_UNAVAILABLE'],
      ]);
      const write = await ask('mutation { createStrategy(input: { name: "During the outage" }) { strategy { id } error { code field } } }');
      expect(write.body).toEqual({ data: { createStrategy: { strategy: null, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } } } });
    } finally {
      await gateway?.close();
      await strategies.close();
      await proxy.cut();
    }
  });
});

describe('a subgraph that is down costs only its own root fields, wherever the document puts them', () => {
  it("through a fragment at the root, and through a non-null field of its below another subgraph's root field", async () => {
    const down = 'http://127.0.0.1:1/graphql';
    const ask = (gateway: { url: string }, query: string) => t.stack.post(JSON.stringify({ query }), { ...json, 'x-api-key': t.errs.apiKey }, gateway.url);
    const strategiesDown = await t.stack.anotherGateway({ config: { subgraphUrls: { ...t.stack.config.subgraphUrls, strategies: down } } });
    try {
      for (const query of [
        '{ viewer { account { id } } ... on Query { listStrategies { nodes { id } } } }',
        '{ viewer { account { id } } ...S } fragment S on Query { listStrategies { nodes { id } } }',
      ]) {
        const read = await ask(strategiesDown, query);
        expect(read.body.data, query).toEqual({ viewer: { account: { id: t.errs.accountId } }, listStrategies: null });
        expect(read.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
          [['listStrategies'], 'SERVICE_UNAVAILABLE'],
        ]);
      }
    } finally {
      await strategiesDown.close();
    }
    await t.errs.graphql('mutation { createStrategy(input: { name: "Below the root" }) { strategy { id } } }');
    const ordersDown = await t.stack.anotherGateway({ config: { subgraphUrls: { ...t.stack.config.subgraphUrls, orders: down } } });
    try {
      // viewer twice under one key: its selections are merged, whatever is run again.
      const read = await ask(
        ordersDown,
        '{ viewer { account { id } } listStrategies(first: 5) { nodes { id orderSubmissions(first: 5) { nodes { id } } } } viewer { account { name } } }',
      );
      expect(read.body.data).toEqual({ viewer: { account: { id: t.errs.accountId, name: expect.any(String) } }, listStrategies: null });
      expect(read.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
        [['listStrategies'], 'SERVICE_UNAVAILABLE'],
      ]);
    } finally {
      await ordersDown.close();
    }
  });
});

describe('a frozen subgraph', () => {
  it("costs only its own fields: viewer stays beside a non-null root field it owns, within the gateway timeout", async () => {
    // Accepts connections and never answers, as a stopped process's listening socket does.
    const held: net.Socket[] = [];
    const frozen = net.createServer((socket) => held.push(socket.on('error', () => {})));
    await new Promise<void>((resolve) => frozen.listen(0, '127.0.0.1', resolve));
    const gateway = await t.stack.anotherGateway({
      config: { subgraphUrls: { ...t.stack.config.subgraphUrls, strategies: `http://127.0.0.1:${(frozen.address() as net.AddressInfo).port}/graphql` } },
    });
    try {
      const ask = (query: string) => t.stack.post(JSON.stringify({ query }), { ...json, 'x-api-key': t.errs.apiKey }, gateway.url);
      const read = await ask('{ viewer { account { id } } listStrategies { nodes { id } } listOrderSubmissions { nodes { id } } }');
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual({ viewer: { account: { id: t.errs.accountId } }, listStrategies: null, listOrderSubmissions: { nodes: [] } });
      expect(read.body.errors.map((error: { path: string[]; extensions: { code: string } }) => [error.path, error.extensions.code])).toEqual([
        [['listStrategies'], 'SERVICE_UNAVAILABLE'],
      ]);
    } finally {
      for (const socket of held) socket.destroy();
      await gateway.close();
      frozen.close();
    }
  });
});
