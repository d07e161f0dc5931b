import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parse, validate, buildSchema, type OperationDefinitionNode } from 'graphql';
import { API_KEY_SCOPES } from '@ots/shared/scopes';
import { PUBLISHED_API_FILE } from '@ots/gateway/compose';
import { refusedFields, scopeRules } from '@ots/gateway/scopes';
import { SUPERGRAPH_PATH } from '@ots/gateway/server';

/**
 * `node --import tsx scripts/bench-scopes.ts`: what the gateway's scope check adds to a request
 * (contract section 5), on `viewer` and `submitOrder`. The check runs once per request on the
 * parsed operation Apollo already holds (its document cache hands back the same object for a
 * repeated query), so it is measured the same way: the same parsed operation, many times. Beside
 * it, the validation of the same document, a step every request already pays, for scale. A key
 * without `read` has the document walked for the fields below the root that need it ("walked").
 * Figures, not pass/fail.
 */
const rules = scopeRules(readFileSync(SUPERGRAPH_PATH, 'utf8'));
const schema = buildSchema(readFileSync(PUBLISHED_API_FILE, 'utf8'));
const everyScope = new Set<string>(API_KEY_SCOPES);
const readOnly = new Set(['read']);
const writeOnly = new Set<string>(API_KEY_SCOPES.filter((scope) => scope !== 'read'));

const DOCUMENTS = {
  viewer: '{ viewer { account { id name } apiKey { id displayPrefix } } }',
  submitOrder:
    'mutation Submit($input: SubmitOrderInput!) { submitOrder(input: $input) { orderSubmission { id status filledQuantity } error { code message field } } }',
};

function nsPerCall(run: () => unknown, iterations = 200_000): number {
  for (let i = 0; i < 10_000; i += 1) run();
  const started = performance.now();
  for (let i = 0; i < iterations; i += 1) run();
  return ((performance.now() - started) * 1e6) / iterations;
}

console.log('\nscope check (gateway, per request, on the parsed operation):\n');
for (const [name, text] of Object.entries(DOCUMENTS)) {
  const document = parse(text);
  const operation = document.definitions[0] as OperationDefinitionNode;
  const allowed = nsPerCall(() => refusedFields(rules, document, operation, everyScope));
  const refused = nsPerCall(() => refusedFields(rules, document, operation, readOnly));
  const walked = nsPerCall(() => refusedFields(rules, document, operation, writeOnly));
  const validation = nsPerCall(() => validate(schema, document), 5_000);
  console.log(
    `${name.padEnd(12)} allowed ${allowed.toFixed(0).padStart(5)} ns   refused ${refused.toFixed(0).padStart(5)} ns   walked ${walked.toFixed(0).padStart(5)} ns   ` +
      `(validating the same document: ${(validation / 1000).toFixed(1)} µs; the check is ${((allowed / validation) * 100).toFixed(2)}% of it)`,
  );
}
console.log('');
