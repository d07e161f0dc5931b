import { buildSubgraphSchema } from '@apollo/subgraph';
import { execute, parse } from 'graphql';
import type { KyselyPlugin } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { newId } from '@ots/shared/ids';
import { createLogger } from '@ots/shared/logger';
import { useStack } from '../../../testing/fixture.ts';
import type { ApiClient, CreateStrategyInput, ListStrategiesQuery, StrategyFieldsFragment, StrategyStatus, UpdateStrategyInput } from '../../../testing/client.ts';
import type { StrategiesDatabase } from '../src/repository.ts';
import { createStrategiesContext } from '../src/context.ts';
import { LIST_ORDERING, resolvers } from '../src/resolvers.ts';
import { strategiesService } from '../src/service.ts';
import { SealedKeysetCursors } from '@ots/shared/sealed-cursors';

const t = useStack({ redis: 'none' });

const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type ListPage = ListStrategiesQuery['listStrategies'];

async function listPage(client: ApiClient, variables: { first?: number; after?: string | null; status?: StrategyStatus[] }): Promise<ListPage> {
  return client.listStrategies({
    ...(variables.first === undefined ? {} : { first: variables.first }),
    after: variables.after ?? null,
    filter: variables.status ? { status: variables.status } : null,
  });
}

describe('strategy lifecycle', () => {
  it('creates an active strategy with a trimmed name, millisecond timestamps, and reads it back', async () => {
    const created = await t.alice.createdStrategy('  Lifecycle  ', 'Buys the open');
    expect(created).toMatchObject({ name: 'Lifecycle', description: 'Buys the open', status: 'ACTIVE' });
    expect(created.createdAt).toMatch(ISO_MILLIS);
    expect(created.updatedAt).toBe(created.createdAt);
    expect(await t.alice.strategy(created.id)).toEqual(created);
  });

  it('updates only the fields given: absent keeps, description null clears', async () => {
    const created = await t.alice.createdStrategy('Editable', 'first');
    const renamed = await t.alice.updateStrategy(created.id, { name: ' Edited ' });
    expect(renamed.error).toBeNull();
    expect(renamed.strategy).toMatchObject({ id: created.id, name: 'Edited', description: 'first', status: 'ACTIVE' });
    expect(Date.parse(renamed.strategy!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
    expect(renamed.strategy!.createdAt).toBe(created.createdAt);

    const described = await t.alice.updateStrategy(created.id, { description: 'second' });
    expect(described.strategy).toMatchObject({ name: 'Edited', description: 'second' });

    const cleared = await t.alice.updateStrategy(created.id, { description: null });
    expect(cleared.strategy).toMatchObject({ name: 'Edited', description: null });

    const untouched = await t.alice.updateStrategy(created.id, {});
    expect(untouched).toEqual({ strategy: cleared.strategy, error: null });
    expect(await t.alice.strategy(created.id)).toEqual(cleared.strategy);
  });

  it('refuses invalid edits with VALIDATION_FAILED naming the field, and changes nothing', async () => {
    const created = await t.alice.createdStrategy('Validated edits', 'kept');
    const cases: [UpdateStrategyInput, string][] = [
      [{ name: '   ' }, 'name'],
      [{ name: null }, 'name'],
      [{ name: 'n'.repeat(101) }, 'name'],
      [{ description: 'd'.repeat(2001) }, 'description'],
    ];
    for (const [input, field] of cases) {
      const result = await t.alice.updateStrategy(created.id, input);
      expect(result.strategy).toBeNull();
      expect(result.error).toMatchObject({ code: 'VALIDATION_FAILED', field });
    }
    expect(await t.alice.strategy(created.id)).toEqual(created);
  });

  it('moves ACTIVE ⇄ PAUSED, repeats are no-ops without error, and ARCHIVED is final', async () => {
    const created = await t.alice.createdStrategy('Transitions');

    const paused = await t.alice.changeStrategyStatus('pauseStrategy', created.id);
    expect(paused).toMatchObject({ strategy: { status: 'PAUSED' }, error: null });
    const pausedAgain = await t.alice.changeStrategyStatus('pauseStrategy', created.id);
    expect(pausedAgain).toEqual({ strategy: paused.strategy, error: null });

    const resumed = await t.alice.changeStrategyStatus('resumeStrategy', created.id);
    expect(resumed).toMatchObject({ strategy: { status: 'ACTIVE' }, error: null });
    const resumedAgain = await t.alice.changeStrategyStatus('resumeStrategy', created.id);
    expect(resumedAgain).toEqual({ strategy: resumed.strategy, error: null });

    const archived = await t.alice.changeStrategyStatus('archiveStrategy', created.id);
    expect(archived).toMatchObject({ strategy: { status: 'ARCHIVED' }, error: null });
    const archivedAgain = await t.alice.changeStrategyStatus('archiveStrategy', created.id);
    expect(archivedAgain).toEqual({ strategy: archived.strategy, error: null });

    for (const mutation of ['pauseStrategy', 'resumeStrategy'] as const) {
      const refused = await t.alice.changeStrategyStatus(mutation, created.id);
      expect(refused.strategy).toBeNull();
      expect(refused.error).toMatchObject({ code: 'INVALID_STATUS_TRANSITION', field: 'id' });
    }
    const edit = await t.alice.updateStrategy(created.id, { description: 'too late' });
    expect(edit).toMatchObject({ strategy: null, error: { code: 'INVALID_STATUS_TRANSITION', field: 'id' } });
    expect(await t.alice.strategy(created.id)).toEqual(archived.strategy);
  });

  it('archives a paused strategy and edits a paused one', async () => {
    const created = await t.alice.createdStrategy('Paused then archived');
    await t.alice.changeStrategyStatus('pauseStrategy', created.id);
    const edited = await t.alice.updateStrategy(created.id, { description: 'while paused' });
    expect(edited).toMatchObject({ strategy: { status: 'PAUSED', description: 'while paused' }, error: null });
    const archived = await t.alice.changeStrategyStatus('archiveStrategy', created.id);
    expect(archived).toMatchObject({ strategy: { status: 'ARCHIVED' }, error: null });
  });

  it('answers NOT_FOUND (field id) for mutations of a missing or malformed id', async () => {
    for (const id of [newId(), 'not-a-uuid', '']) {
      expect(await t.alice.updateStrategy(id, { description: 'x' })).toMatchObject({
        strategy: null,
        error: { code: 'NOT_FOUND', field: 'id' },
      });
      for (const mutation of ['pauseStrategy', 'resumeStrategy', 'archiveStrategy'] as const) {
        expect(await t.alice.changeStrategyStatus(mutation, id)).toMatchObject({
          strategy: null,
          error: { code: 'NOT_FOUND', field: 'id' },
        });
      }
      expect(await t.alice.strategy(id)).toBeNull();
    }
  });

  it('finds a strategy by its id in upper case too', async () => {
    const created = await t.alice.createdStrategy('Upper-case id');
    expect(await t.alice.strategy(created.id.toUpperCase())).toEqual(created);
  });
});

describe('strategy names and descriptions', () => {
  it('accepts the limits: 100-character name, 2,000-character description', async () => {
    const name = `L${'n'.repeat(99)}`;
    const created = await t.alice.createdStrategy(name, 'd'.repeat(2000));
    expect(created.name).toBe(name);
    expect(created.description).toHaveLength(2000);
  });

  it('refuses names and descriptions beyond the limits with VALIDATION_FAILED and creates nothing', async () => {
    const before = await listPage(t.alice, { first: 200 });
    const cases: [CreateStrategyInput, string][] = [
      [{ name: '' }, 'name'],
      [{ name: ' \t ' }, 'name'],
      [{ name: 'n'.repeat(101) }, 'name'],
      [{ name: 'Too long description', description: 'd'.repeat(2001) }, 'description'],
    ];
    for (const [input, field] of cases) {
      const result = await t.alice.createStrategy(input);
      expect(result.strategy).toBeNull();
      expect(result.error).toMatchObject({ code: 'VALIDATION_FAILED', field });
      expect(result.error!.message.length).toBeGreaterThan(0);
    }
    const after = await listPage(t.alice, { first: 200 });
    expect(after.nodes.map((node) => node.id)).toEqual(before.nodes.map((node) => node.id));
  });

  it('refuses a name already used by a non-archived strategy, whatever the case', async () => {
    const first = await t.alice.createdStrategy('Mean Reversion');
    for (const name of ['Mean Reversion', 'MEAN REVERSION', '  mean reversion ']) {
      const result = await t.alice.createStrategy({ name });
      expect(result.strategy).toBeNull();
      expect(result.error).toMatchObject({ code: 'STRATEGY_NAME_TAKEN', field: 'name' });
    }
    await t.alice.changeStrategyStatus('pauseStrategy', first.id);
    expect((await t.alice.createStrategy({ name: 'mean reversion' })).error).toMatchObject({ code: 'STRATEGY_NAME_TAKEN' });
  });

  it('frees the name when the strategy is archived, even for several archived namesakes', async () => {
    const first = await t.alice.createdStrategy('Recycled');
    await t.alice.changeStrategyStatus('archiveStrategy', first.id);
    const second = await t.alice.createdStrategy('RECYCLED');
    await t.alice.changeStrategyStatus('archiveStrategy', second.id);
    const third = await t.alice.createdStrategy('recycled');
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
    expect(await t.alice.strategy(first.id)).toMatchObject({ name: 'Recycled', status: 'ARCHIVED' });
  });

  it('applies the same rule to renames, and lets a strategy change the case of its own name', async () => {
    await t.alice.createdStrategy('Taken name');
    const other = await t.alice.createdStrategy('Other name');
    const clash = await t.alice.updateStrategy(other.id, { name: 'TAKEN NAME', description: 'not applied' });
    expect(clash).toMatchObject({ strategy: null, error: { code: 'STRATEGY_NAME_TAKEN', field: 'name' } });
    expect(await t.alice.strategy(other.id)).toEqual(other);

    const recased = await t.alice.updateStrategy(other.id, { name: 'OTHER NAME' });
    expect(recased).toMatchObject({ strategy: { name: 'OTHER NAME' }, error: null });
  });

  it('lets two accounts use the same name', async () => {
    await t.alice.createdStrategy('Shared name');
    const bobs = await t.bob.createdStrategy('shared NAME');
    expect(bobs.name).toBe('shared NAME');
  });

  it('lets exactly one of many concurrent creates with the same name win', async () => {
    const names = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? 'Race' : 'RACE'));
    const results = await Promise.all(names.map((name) => t.alice.createStrategy({ name })));
    expect(results.filter((result) => result.strategy !== null)).toHaveLength(1);
    const losers = results.filter((result) => result.error !== null);
    expect(losers).toHaveLength(names.length - 1);
    for (const loser of losers) expect(loser.error).toMatchObject({ code: 'STRATEGY_NAME_TAKEN', field: 'name' });
  });

  it('lets exactly one of two concurrent renames to the same name win', async () => {
    const a = await t.alice.createdStrategy('Rename race A');
    const b = await t.alice.createdStrategy('Rename race B');
    const results = await Promise.all([
      t.alice.updateStrategy(a.id, { name: 'Rename race winner' }),
      t.alice.updateStrategy(b.id, { name: 'rename race WINNER' }),
    ]);
    expect(results.filter((result) => result.error === null)).toHaveLength(1);
    expect(results.filter((result) => result.error?.code === 'STRATEGY_NAME_TAKEN')).toHaveLength(1);
  });

  it('serializes concurrent transitions: every answer matches one order of execution', async () => {
    const created = await t.alice.createdStrategy('Concurrent transitions');
    await t.alice.changeStrategyStatus('pauseStrategy', created.id);
    const [resume, archive] = await Promise.all([
      t.alice.changeStrategyStatus('resumeStrategy', created.id),
      t.alice.changeStrategyStatus('archiveStrategy', created.id),
    ]);
    expect(archive).toMatchObject({ strategy: { status: 'ARCHIVED' }, error: null });
    // Resume first: it succeeds and archive follows; archive first: resume finds it archived.
    if (resume.error) expect(resume.error.code).toBe('INVALID_STATUS_TRANSITION');
    else expect(resume.strategy!.status).toBe('ACTIVE');
    expect((await t.alice.strategy(created.id))!.status).toBe('ARCHIVED');
  });
});

describe('listStrategies', () => {
  let carol: ApiClient;
  const created: StrategyFieldsFragment[] = [];

  beforeAll(async () => {
    carol = await t.newAccount('Carol');
    for (let i = 0; i < 7; i += 1) created.push(await carol.createdStrategy(`List ${i}`));
    await carol.changeStrategyStatus('pauseStrategy', created[1]!.id);
    await carol.changeStrategyStatus('archiveStrategy', created[2]!.id);
    await carol.changeStrategyStatus('pauseStrategy', created[4]!.id);
  });

  const newestFirst = () => [...created].reverse().map((strategy) => strategy.id);

  it('lists every state, newest first, with default page size and consistent edges', async () => {
    const page = await listPage(carol, {});
    expect(page.nodes.map((node) => node.id)).toEqual(newestFirst());
    expect(page.edges.map((edge) => edge.node.id)).toEqual(newestFirst());
    expect(page.pageInfo).toEqual({ hasNextPage: false, endCursor: page.edges.at(-1)!.cursor });
  });

  it('filters by one or several states', async () => {
    const paused = await listPage(carol, { status: ['PAUSED'] });
    expect(paused.nodes.map((node) => node.name)).toEqual(['List 4', 'List 1']);
    const notActive = await listPage(carol, { status: ['PAUSED', 'ARCHIVED'] });
    expect(notActive.nodes.map((node) => node.name)).toEqual(['List 4', 'List 2', 'List 1']);
    expect(notActive.nodes.every((node) => node.status !== 'ACTIVE')).toBe(true);
    const active = await listPage(carol, { status: ['ACTIVE'] });
    expect(active.nodes.map((node) => node.name)).toEqual(['List 6', 'List 5', 'List 3', 'List 0']);
    const none = await listPage(carol, { status: [] });
    expect(none).toEqual({ nodes: [], edges: [], pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it('pages with keyset cursors: every strategy once, in order, even when new ones arrive between pages', async () => {
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page: ListPage = await listPage(carol, { first: 2, after });
      expect(page.nodes.length).toBeLessThanOrEqual(2);
      seen.push(...page.nodes.map((node) => node.id));
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
      if (pages === 0) created.push(await carol.createdStrategy('Arrived while paging'));
      pages += 1;
    } while (after);
    expect(pages).toBe(4);
    expect(seen).toEqual(newestFirst().slice(1));
  });

  it('pages a filtered list with the filter applied on every page', async () => {
    const first = await listPage(carol, { first: 1, status: ['PAUSED'] });
    expect(first.nodes.map((node) => node.name)).toEqual(['List 4']);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = await listPage(carol, { first: 1, status: ['PAUSED'], after: first.pageInfo.endCursor });
    expect(second.nodes.map((node) => node.name)).toEqual(['List 1']);
    expect(second.pageInfo.hasNextPage).toBe(false);
  });

  it('refuses first outside 1-200 and foreign or tampered cursors with a top-level BAD_USER_INPUT', async () => {
    const forged = Buffer.from(JSON.stringify(['strategies:created_at_desc', 'yesterday', 'x'])).toString('base64url');
    const otherOrdering = Buffer.from(JSON.stringify(['orders:submitted_at_desc', '2026-01-01T00:00:00.000Z', newId()])).toString('base64url');
    const cases: [Record<string, unknown>, string][] = [
      [{ first: 0 }, 'first'],
      [{ first: 201 }, 'first'],
      [{ first: -1 }, 'first'],
      [{ first: 10, after: 'not a cursor' }, 'after'],
      [{ first: 10, after: forged }, 'after'],
      [{ first: 10, after: otherOrdering }, 'after'],
    ];
    for (const [variables, argumentName] of cases) {
      const result = await carol.graphql('query ($first: Int, $after: String) { listStrategies(first: $first, after: $after) { nodes { id } } }',
        variables,
      );
      expect(result.body.data).toBeNull();
      expect(result.body.errors).toHaveLength(1);
      expect(result.body.errors[0]).toMatchObject({
        path: ['listStrategies'],
        extensions: { code: 'BAD_USER_INPUT', argumentName },
      });
    }
    const largest = await listPage(carol, { first: 200 });
    expect(largest.nodes.length).toBe(created.length);
  });
});

describe('account isolation', () => {
  let alices: StrategyFieldsFragment;

  beforeAll(async () => {
    alices = await t.alice.createdStrategy('Private to Alice', 'secret plan');
  });

  it('hides another account’s strategy from strategy(id) and listStrategies', async () => {
    expect(await t.bob.strategy(alices.id)).toBeNull();
    const bobsList = await listPage(t.bob, { first: 200 });
    expect(bobsList.nodes.map((node) => node.id)).not.toContain(alices.id);
    expect(bobsList.nodes.every((node) => !node.name.includes('Alice'))).toBe(true);
  });

  it('answers NOT_FOUND to every mutation of another account’s strategy and changes nothing', async () => {
    expect(await t.bob.updateStrategy(alices.id, { name: 'Hijacked', description: null })).toMatchObject({
      strategy: null,
      error: { code: 'NOT_FOUND', field: 'id' },
    });
    for (const mutation of ['pauseStrategy', 'resumeStrategy', 'archiveStrategy'] as const) {
      expect(await t.bob.changeStrategyStatus(mutation, alices.id)).toMatchObject({
        strategy: null,
        error: { code: 'NOT_FOUND', field: 'id' },
      });
    }
    expect(await t.alice.strategy(alices.id)).toEqual(alices);
  });

  it('answers NOT_FOUND the same way for a foreign id as for one that never existed', async () => {
    const missingId = newId();
    const foreign = await t.bob.changeStrategyStatus('pauseStrategy', alices.id);
    const missing = await t.bob.changeStrategyStatus('pauseStrategy', missingId);
    // The message repeats the id the client sent, and nothing else.
    expect({ ...foreign, error: { ...foreign.error, message: foreign.error?.message.replace(alices.id, '<id>') } }).toEqual({
      ...missing,
      error: { ...missing.error, message: missing.error?.message.replace(missingId, '<id>') },
    });
  });

  it('does not let another account’s names block a create or a rename', async () => {
    const bobs = await t.bob.createdStrategy('private to alice');
    const renamed = await t.bob.updateStrategy(bobs.id, { name: 'PRIVATE TO ALICE' });
    expect(renamed.error).toBeNull();
  });
});

describe('Strategy entity resolution (federation)', () => {
  it('resolves a batch of 200 references with one SQL query, scoped to the caller: foreign and malformed ids are null', async () => {
    const dave = await t.newAccount('Dave');
    const daves = await Promise.all(Array.from({ length: 5 }, (_, i) => dave.createdStrategy(`Batch ${i}`)));
    const foreign = await t.alice.createdStrategy('Not Dave’s');

    let queries = 0;
    const counter: KyselyPlugin = {
      transformQuery: (args) => {
        queries += 1;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    const db = createDatabase<StrategiesDatabase>({ url: t.stack.databaseUrl, schema: 'strategies', applicationName: 'batch-test' }).withPlugin(counter);
    try {
      const schema = buildSubgraphSchema([{ typeDefs: strategiesService.typeDefs, resolvers: resolvers as never }]);
      // 200 representations, as the gateway sends for a page of 200 orders: Dave's own, repeated,
      // plus another account's id, a missing one and a malformed one.
      const ids = Array.from({ length: 200 }, (_, i) => {
        if (i === 0) return foreign.id;
        if (i === 1) return newId();
        if (i === 2) return 'not-a-uuid';
        return daves[i % daves.length]!.id;
      });
      const context = createStrategiesContext(
        { caller: { accountId: dave.accountId, apiKeyId: dave.apiKeyId, scopes: ['read'] }, assertion: '', requestId: 'batch-test', log: createLogger('test', 'silent') },
        db,
        new SealedKeysetCursors(Buffer.from('the test secret, long enough to seal', 'utf8'), { tag: LIST_ORDERING, keyInfo: 'test' }),
      );
      const result = await execute({
        schema,
        document: parse('query ($representations: [_Any!]!) { _entities(representations: $representations) { ... on Strategy { id name status } } }'),
        variableValues: { representations: ids.map((id) => ({ __typename: 'Strategy', id })) },
        contextValue: context,
      });
      expect(result.errors).toBeUndefined();
      const entities = (result.data as { _entities: ({ id: string; name: string } | null)[] })._entities;
      expect(entities).toHaveLength(200);
      expect(entities.slice(0, 3)).toEqual([null, null, null]);
      entities.slice(3).forEach((entity, index) => {
        const expected = daves[(index + 3) % daves.length]!;
        expect(entity).toEqual({ id: expected.id, name: expected.name, status: 'ACTIVE' });
      });
      expect(queries).toBe(1);
    } finally {
      await db.destroy();
    }
  });
});
