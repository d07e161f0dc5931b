import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack, type TestStack } from '@ots/shared/testing/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.close());

it('smoke', async () => {
  const { apiKey } = await stack.createAccountWithKey();
  const r = await stack.graphql(apiKey, '{ viewer { account { id name } apiKey { displayPrefix } } }');
  console.log(r.status, JSON.stringify(r.body), [...r.headers]);
  const a = await stack.graphql(undefined, 'query Q { a: viewer { account { id } } listOrderSubmissions { nodes { id } } }');
  console.log(a.status, JSON.stringify(a.body));
  const b = await stack.graphql('svc_live_bad', '{ viewer { account { id } } }');
  console.log(b.status, JSON.stringify(b.body), b.headers.get('www-authenticate'));
  expect(r.status).toBe(200);
});
