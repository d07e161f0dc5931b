import { readFileSync } from 'node:fs';
import { buildSchema, isObjectType, parse, validate, type GraphQLObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { CLIENT_SAFE_CODES } from '@ots/shared/errors';
import { useStack } from '../../testing/fixture.ts';
import { PUBLISHED_API_FILE } from '../src/compose.ts';
import { OTHER_ERROR_CODES, PAYLOAD_ERROR_CODES } from '../src/reference/error-codes.ts';
import { exampleOperation, scopeLine } from '../src/reference/render.ts';

/** Contract section 10: the reference at /docs, generated from the published schema, with no key and nothing from elsewhere. */
const t = useStack({ accounts: [] });
const publishedSdl = readFileSync(PUBLISHED_API_FILE, 'utf8');
const schema = buildSchema(publishedSdl);

const get = async (path: string) => {
  const response = await fetch(new URL(path, t.stack.gatewayUrl), { redirect: 'follow' });
  return { status: response.status, headers: response.headers, text: await response.text() };
};

describe('/docs', () => {
  it('serves the guide, the reference and the error codes without a key, loading nothing from elsewhere', async () => {
    for (const path of ['/docs', '/docs/reference.html', '/docs/errors.html']) {
      const page = await get(path);
      expect(page.status, path).toBe(200);
      expect(page.headers.get('content-type')).toContain('text/html');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(page.text).not.toMatch(/<script|<link|src="http|href="http/);
    }
    expect((await get('/docs/nothing.html')).status).toBe(404);
  });

  it('documents every operation, type and field of the published schema, with its description', async () => {
    const reference = (await get('/docs/reference.html')).text;
    for (const type of Object.values(schema.getTypeMap()).filter((type) => !type.name.startsWith('__'))) {
      if (['Query', 'Mutation', 'Subscription'].includes(type.name) && isObjectType(type)) {
        for (const field of Object.values(type.getFields())) expect(reference, field.name).toContain(`id="op-${field.name}"`);
      } else {
        expect(reference, type.name).toContain(`id="type-${type.name}"`);
      }
    }
    expect(reference).toContain('at most 500 per call');
  });

  it("shows input fields' defaults, and the arguments of every field with their defaults and descriptions", async () => {
    const reference = (await get('/docs/reference.html')).text;
    const typeSection = (name: string) => new RegExp(`<section id="type-${name}">([\\s\\S]*?)</section>`).exec(reference)?.[1] ?? '';
    const fieldRow = (type: string, field: string) => new RegExp(`<tr><td><code>${field}</code></td>[\\s\\S]*?</tr>`).exec(typeSection(type))?.[0];
    /** The table of a field's arguments, in its row. */
    const argumentsOf = (type: string, field: string) => new RegExp(`<tr><td><code>${field}\\([\\s\\S]*?</table>`).exec(typeSection(type))?.[0] ?? '';
    const argumentRow = (type: string, field: string, argument: string) =>
      new RegExp(`<tr><td><code>${argument}</code></td>[\\s\\S]*?</tr>`).exec(argumentsOf(type, field))?.[0];

    expect(fieldRow('SubmitOrderInput', 'timeInForce')).toContain('</a></code> = <code>DAY</code>');
    expect(fieldRow('RecordFillInput', 'liquidity')).toContain('</a></code> = <code>UNKNOWN</code>');
    expect(fieldRow('RecordFillInput', 'fee')).toContain('</a></code> = <code>&quot;0&quot;</code>');

    expect(argumentRow('Strategy', 'orderSubmissions', 'first')).toMatch(/= <code>50<\/code><\/td><td><p>1–200\.<\/p>/);
    expect(argumentRow('Strategy', 'orderSubmissions', 'orderBy')).toContain('= <code>SUBMITTED_AT_DESC</code>');
    expect(argumentRow('Strategy', 'orderSubmissions', 'filter')).toContain('href="reference.html#type-OrderSubmissionFilter"');
    expect(argumentRow('WebhookEndpoint', 'deliveries', 'first')).toContain('= <code>50</code>');
    // A root field's default is a GraphQL literal too, not JSON.
    expect(new RegExp('<section id="op-listOrderSubmissions">[\\s\\S]*?</section>').exec(reference)?.[0]).toContain('= <code>SUBMITTED_AT_DESC</code>');
  });

  it('gives an example per operation that the schema accepts', () => {
    for (const root of ['Query', 'Mutation', 'Subscription']) {
      const type = schema.getType(root);
      if (!type || !isObjectType(type)) continue;
      for (const field of Object.values(type.getFields())) {
        const errors = validate(schema, parse(exampleOperation(root, field)));
        expect(errors.map((error) => error.message), `${root}.${field.name}`).toEqual([]);
      }
    }
  });

  it('gives no mutation example that acts on everything it may: cancelOrderSubmissions\' names a filter', () => {
    const mutations = Object.values((schema.getType('Mutation') as GraphQLObjectType).getFields());
    const filtered = mutations.filter((field) => field.args.some((arg) => arg.name === 'filter'));
    expect(filtered.map((field) => field.name)).toContain('cancelOrderSubmissions');
    for (const field of filtered) expect(exampleOperation('Mutation', field), field.name).toMatch(/filter: \{symbol: "AAPL"\}/);
  });

  it('names the scope of every operation as the supergraph declares it: the contract\'s table, viewer none, events read', async () => {
    const reference = (await get('/docs/reference.html')).text;
    const scopeOf = (name: string) => {
      const section = new RegExp(`<section id="op-${name}">([\\s\\S]*?)</section>`).exec(reference)?.[1] ?? '';
      return /<p class="scope">Scope: (.*?)<\/p>/.exec(section)?.[1];
    };
    // Contract section 5, "Scopes and allowed addresses".
    const writes: Record<string, string> = {
      submitOrder: 'orders:write',
      cancelOrderSubmission: 'orders:write',
      replaceOrderSubmission: 'orders:write',
      cancelOrderSubmissions: 'orders:write',
      recordFill: 'fills:write',
      createStrategy: 'strategies:write',
      updateStrategy: 'strategies:write',
      pauseStrategy: 'strategies:write',
      resumeStrategy: 'strategies:write',
      archiveStrategy: 'strategies:write',
      redeliverEvent: 'webhooks:write',
    };
    const expected = (root: string, name: string) => {
      if (root === 'Query' && name === 'viewer') return '<code>none</code> (any key may ask)';
      if (root === 'Mutation') return `<code>${writes[name] ?? (name.includes('Webhook') ? 'webhooks:write' : 'undeclared in this test')}</code>`;
      return '<code>read</code>';
    };
    for (const root of ['Query', 'Mutation', 'Subscription']) {
      for (const field of Object.values((schema.getType(root) as GraphQLObjectType).getFields())) {
        expect(scopeOf(field.name), `${root}.${field.name}`).toBe(expected(root, field.name));
      }
    }
    expect(scopeOf('events')).toBe('<code>read</code>');
    expect(scopeLine([['orders:write', 'read'], ['fills:write']])).toBe('Scope: <code>orders:write</code> and <code>read</code> or <code>fills:write</code>');
  });

  it('lists every payload error code and every top-level code a client may see', async () => {
    const errors = (await get('/docs/errors.html')).text;
    for (const code of [...Object.keys(PAYLOAD_ERROR_CODES), ...CLIENT_SAFE_CODES].filter((code) => code !== 'PERSISTED_QUERY_NOT_FOUND' && code !== 'OPERATION_RESOLUTION_FAILURE')) {
      expect(errors, code).toContain(`id="error-${code}"`);
    }
    expect(Object.keys(OTHER_ERROR_CODES)).toEqual(expect.arrayContaining(['401', '403', '406', '409', '422', '429']));
  });
});
