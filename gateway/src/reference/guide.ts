/** The hand-written part of `/docs`: how to authenticate, page, sync, stream and retry. */
export const GUIDE = `<h1>Order Trading API</h1>
<p>One GraphQL endpoint, <code>POST /graphql</code>, for orders, fills, strategies, positions, events and webhooks.
The <a href="reference.html">API reference</a> lists every operation with an example; <a href="errors.html">Error codes</a> says what each error means.
The TypeScript client <code>@ots/client</code> (<code>clients/typescript</code> in the repository) does the retries, paging and streaming described here for you.</p>

<h2 id="authenticate">Authenticate</h2>
<p>Send your API key in the <code>X-API-Key</code> header on every request. Keys are made in the console (Settings → API Keys) or with <code>npm run admin -- key create --account ACCOUNT_ID</code>; <code>npm start</code> writes a demo key to <code>.data/demo-api-key</code>.</p>
<pre>KEY=$(cat .data/demo-api-key)
curl -s http://127.0.0.1:4000/graphql -H 'content-type: application/json' -H "X-API-Key: $KEY" \\
  -d '{"query":"{ viewer { account { id name } apiKey { displayPrefix } } }"}'</pre>
<p>Without a key the answer is HTTP 200 with <code>UNAUTHENTICATED</code> errors; a bad, revoked or expired key gets 401, an account without API access 403.
A key carries scopes (<code>read</code>, <code>orders:write</code>, <code>fills:write</code>, <code>strategies:write</code>, <code>webhooks:write</code>); each operation in the reference names the one it needs, and a missing one is a <code>FORBIDDEN</code> error naming it.</p>

<h2 id="page">Page</h2>
<p>Lists are connections: <code>first</code> (1–200, default 50) and <code>after</code> (a cursor). Ask again with <code>after: pageInfo.endCursor</code> while <code>pageInfo.hasNextPage</code>. Cursors are opaque; rows added while you page never make you skip or repeat one.</p>
<pre>query($after: String) { listOrderSubmissions(first: 200, after: $after) { nodes { id status } pageInfo { hasNextPage endCursor } } }</pre>

<h2 id="sync">Sync</h2>
<p>To keep a local copy of your orders, page <code>listOrderSubmissions(orderBy: UPDATED_AT_ASC)</code> and store the last <code>endCursor</code>; next time, continue with <code>after</code> set to it. You get every order changed since, oldest change first by <code>updatedAt</code>, none missed; a client that keeps only the last <code>updatedAt</code> it saw and asks with <code>filter: {updatedAfter}</code> misses none either. On this feed (and on <code>listEvents</code>) <code>endCursor</code> is never null: an empty page returns the position you asked from, so always store it.</p>

<h2 id="stream">Stream</h2>
<p>The <code>events</code> subscription pushes every event as it happens, from <code>after</code> (a cursor of <code>listEvents</code> or of a stream item) or from now. Two transports, same key rules: GraphQL over SSE at <code>POST /graphql/stream</code> (the graphql-sse protocol; each message's SSE <code>id</code> is its cursor, and a reconnect with <code>Last-Event-ID</code> resumes after it) and GraphQL over WebSocket at <code>/graphql/ws</code> (graphql-transport-ws; the key in the upgrade request's <code>X-API-Key</code> header or, for clients that cannot set headers such as browsers, as <code>{"X-API-Key": "svc_live_…"}</code> in the <code>connection_init</code> payload). Keep the last cursor you processed and resume from it after any disconnect: you see each event once, in order. A stream sends a heartbeat at least every 10 s; one that falls 1,000 events behind ends with <code>SLOW_CONSUMER</code> and should resume from its cursor.</p>
<pre>subscription { events(filter: { types: ["fill.recorded"] }) { cursor event { id type occurredAt data } } }</pre>
<p>Webhooks deliver the same events by POST, signed to the Standard Webhooks specification: verify them with <code>verifyWebhook</code> of @ots/client or any Standard Webhooks library, and expect the same <code>webhook-id</code> more than once (delivery is at least once).</p>

<h2 id="retry">Retry</h2>
<p>Retry on a network error, a timeout, HTTP 409, 429 (after <code>Retry-After</code> seconds), 5xx, <code>SERVICE_UNAVAILABLE</code> and <code>TEMPORARILY_UNAVAILABLE</code>, with exponential back-off and jitter. Do not retry other errors unchanged, nor an answer with <code>Idempotent-Replayed: true</code> under its key: they will give the same answer.</p>
<p>Mutations are safe to retry when you make them idempotent:</p>
<ul>
<li><strong>Idempotency-Key</strong>: send a fresh key (e.g. a UUID) with each mutation call and the same key on its retries. For 24 hours, a repeat with the same key and body is answered with the first answer (header <code>Idempotent-Replayed: true</code>) and runs nothing again; the same key with another body gets 422; a repeat while the first still runs gets 409 (retry shortly), also after a 504 timeout until the mutation has finished, and then gets its answer. An answer showing that nothing ran (every operation unavailable) is not kept: the retry runs once the service is back. When the service got the mutation and did not answer, or the gateway running it died, it may have run: a <code>SERVICE_UNAVAILABLE</code> answer saying so is kept, and every retry with the key is replayed it and runs nothing. Check whether it ran (list your strategies, or look the order up by its <code>clientOrderId</code>); if not, send it again under a new key. Keys are per account; a key without the mutation's scope gets <code>FORBIDDEN</code>, never another key's answer.</li>
<li><strong>Natural ids</strong>: <code>submitOrder</code> and <code>replaceOrderSubmission</code> with a <code>clientOrderId</code>, and <code>recordFill</code> with its <code>executionId</code>, return the existing object when the same fields come again, whenever the retry happens.</li>
</ul>
<pre>curl -s http://127.0.0.1:4000/graphql -H 'content-type: application/json' -H "X-API-Key: $KEY" -H 'Idempotency-Key: 6f1c2a9e-order-1' \\
  -d '{"query":"mutation { submitOrder(input: {symbol: \\"AAPL\\", side: BUY, type: MARKET, quantity: \\"10\\"}) { orderSubmission { id status } error { code field message } } }"}'</pre>

<h2 id="limits">Limits</h2>
<p>50 requests/s per key with bursts of 100 (<code>RateLimit</code> and <code>RateLimit-Policy</code> headers on every answer to a valid key; 429 with <code>Retry-After</code> over it); bodies up to 100 KiB; documents up to depth 10, 15 aliases, 2,000 tokens and a cost that fits <code>listOrderSubmissions(first: 200)</code> with strategy and fills; 10 open streams per key. Decimals are strings (<code>"187.25"</code>), instants ISO-8601 UTC.</p>
`;
