import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand, type Finished } from '@ots/shared/testing/processes';
import { checkSubgraph, publishedSubgraphs } from '../src/schema-check.ts';
import { composeSupergraph, PUBLISHED_API_FILE } from '../src/compose.ts';

/** The check a subgraph's team runs before deploying it alone (`npm run schema:check -- --service orders`). */
const publishedApi = readFileSync(PUBLISHED_API_FILE, 'utf8');
const ordersSdl = readFileSync(new URL('../../services/orders/schema.graphql', import.meta.url), 'utf8');

function edited(from: string, to: string): string {
  expect(ordersSdl).toContain(from);
  return ordersSdl.replace(from, to);
}

const check = (sdl: string, supergraph?: string) => checkSubgraph({ service: 'orders', sdl, others: publishedSubgraphs('orders', supergraph), publishedApi });

describe('the schema check of one subgraph', () => {
  it('passes the SDL as it is, against the repository and against the running supergraph', () => {
    expect(check(ordersSdl)).toEqual({ compositionErrors: [], breaking: [], dangerous: [] });
    expect(check(ordersSdl, composeSupergraph().supergraphSdl)).toEqual({ compositionErrors: [], breaking: [], dangerous: [] });
  });

  it('passes an additive change', () => {
    const withField = edited('  "When replaceOrderSubmission replaced this order."', '  "The venue\'s own id."\n  venueOrderId: String\n  "When replaceOrderSubmission replaced this order."');
    expect(check(withField)).toEqual({ compositionErrors: [], breaking: [], dangerous: [] });
    // Allowed, and named: a client's exhaustive handling may notice it.
    const withArgument = edited('submitOrder(input: SubmitOrderInput!)', 'submitOrder(input: SubmitOrderInput!, venue: String)');
    expect(check(withArgument)).toEqual({
      compositionErrors: [],
      breaking: [],
      dangerous: [expect.stringContaining('An optional arg venue on Mutation.submitOrder was added')],
    });
  });

  it('reports a removed field and a new required argument as breaking', () => {
    const removed = edited('  "The order that replaced this one."\n  replacedBy: OrderSubmission\n', '');
    expect(check(removed).breaking).toEqual([expect.stringContaining('OrderSubmission.replacedBy was removed')]);
    const required = edited('submitOrder(input: SubmitOrderInput!)', 'submitOrder(input: SubmitOrderInput!, venue: String!)');
    expect(check(required).breaking).toEqual([expect.stringContaining('A required arg venue on Mutation.submitOrder was added')]);
  });

  it('reports an SDL that does not compose with the others', () => {
    // fills provides the order's shareable fields with their published types.
    const retyped = edited('  symbol: String! @shareable', '  symbol: Int! @shareable');
    const result = check(retyped);
    expect(result.compositionErrors).toEqual([expect.stringContaining('OrderSubmission.symbol')]);
  });
});

describe('npm run schema:check', () => {
  const directory = mkdtempSync(join(tmpdir(), 'schema-check-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  async function run(args: string[]): Promise<Finished> {
    return runCommand(process.execPath, ['--import', 'tsx', 'gateway/src/schema-check.ts', ...args]);
  }

  it('exits 0 for a compatible SDL and 1, naming the change, for a breaking one', async () => {
    const compatible = join(directory, 'compatible.graphql');
    writeFileSync(compatible, ordersSdl);
    const breaking = join(directory, 'breaking.graphql');
    writeFileSync(breaking, edited('  "The order that replaced this one."\n  replacedBy: OrderSubmission\n', ''));
    expect(await run(['--service', 'orders', '--schema', compatible])).toMatchObject({
      code: 0,
      stdout: 'orders: composes with the other subgraphs and breaks nothing of the published API\n',
    });
    const refused = await run(['--service', 'orders', '--schema', breaking]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('orders breaks the published API');
    expect(refused.stderr).toContain('OrderSubmission.replacedBy was removed');
    expect((await run(['--service', 'trades'])).code).toBe(2);
  });
});
