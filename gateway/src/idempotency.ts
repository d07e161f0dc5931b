import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import type { IdempotencyStore, StoredAnswer } from '@ots/accounts';
import { startLoop, type BackgroundLoop } from '@ots/shared/background';
import type { Logger } from '@ots/shared/logger';
import { scopeSet } from '@ots/shared/scopes';
import type { GatewayContext } from './data-source.ts';
import { graphqlBody, operationNameOf } from './graphql-body.ts';
import { rootFieldsOf, selectedOperation, surelySkippedOut, type RootField } from './root-fields.ts';
import { refusedFields, type ScopeRules } from './scopes.ts';
import { gatewayTimedOut } from './timeouts.ts';
import { rootFieldErrorsBody } from './unauthenticated.ts';

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
const PURGE_INTERVAL_MS = 10 * 60_000;
/** Far deeper than any input the schema takes; deeper variables are refused before they are hashed. */
const MAX_VARIABLES_DEPTH = 100;
/** How long an answer that could not be kept is tried again, its claim renewed meanwhile. */
const KEEP_ANSWER_RETRY_MS = 60_000;
const KEEP_ANSWER_FIRST_DELAY_MS = 250;
const KEEP_ANSWER_MAX_DELAY_MS = 10_000;

/** What the gateway knows of the supergraph's fields: the scopes they need, and who resolves each root field. */
export interface RootFieldRules extends ScopeRules {
  /** The subgraph that resolves each root field (`Mutation.submitOrder` → `orders`). */
  owners: ReadonlyMap<string, string>;
}

interface Claim {
  accountId: string;
  key: string;
  rootFields: RootField[];
  /** The request's context, which notes the subgraphs that did not answer. */
  context: GatewayContext;
  /** Whether the claim was given its outcome (kept, released or left to its lease). */
  settled: boolean;
  /** The route's handler: a request answered by a hook never runs it. */
  handler: 'waiting' | 'running' | 'finished';
  /** The connection closed: the handler's answer settles the claim itself, whether or not it is sent. */
  closed: boolean;
  leaseRenewal: NodeJS.Timeout;
}

function nestedDeeperThan(value: unknown, limit: number): boolean {
  // Iterative: the body's JSON may nest deeper than the call stack allows.
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (!next.value || typeof next.value !== 'object') continue;
    if (next.depth >= limit) return true;
    for (const member of Object.values(next.value)) pending.push({ value: member, depth: next.depth + 1 });
  }
  return false;
}

/** A JSON value with object members in one order, so that a repeat differing only in member order is the same request. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((name) => [name, canonical((value as Record<string, unknown>)[name])]),
    );
  }
  return value;
}

function requestHash(body: { query?: unknown; variables?: unknown; operationName?: unknown }): Buffer {
  // No variables, null and {} are one request.
  const variables = body.variables && typeof body.variables === 'object' && Object.keys(body.variables).length > 0 ? body.variables : null;
  return createHash('sha256')
    .update(JSON.stringify(canonical([body.query, variables, body.operationName ?? null])))
    .digest();
}

function mutationOf(query: string, operationName: string | undefined): { document: DocumentNode; operation: OperationDefinitionNode } | undefined {
  try {
    const document = parse(query);
    const operation = selectedOperation(document, operationName);
    return operation.operation === 'mutation' ? { document, operation } : undefined;
  } catch {
    // A document that does not parse or names no operation runs nothing: Apollo answers it as usual.
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** What a root field's own outage error says of it: that it ran nothing, or that it may have run. */
type RootFieldOutage = 'nothing-ran' | 'may-have-run';

/**
 * What an error of the root field `key` itself (not of a field below it) says of it: `nothing-ran` for a
 * subgraph's TEMPORARILY_UNAVAILABLE, or SERVICE_UNAVAILABLE when the subgraph owning the root field
 * was never reached; `may-have-run` for SERVICE_UNAVAILABLE when the request reached it (it timed out,
 * the connection broke, it answered 5xx), since a subgraph runs on after the gateway gives up. Another
 * subgraph's outage below a root field can null that root field (GraphQL's null rule), and the gateway
 * names the root field in its error, though its change committed: that error says nothing here.
 */
function outageOfRootField(error: unknown, key: string, owner: string | undefined, context: GatewayContext): RootFieldOutage | undefined {
  if (!isRecord(error) || !Array.isArray(error.path) || error.path.length !== 1 || error.path[0] !== key) return undefined;
  const code = isRecord(error.extensions) ? error.extensions.code : undefined;
  if (code === 'TEMPORARILY_UNAVAILABLE') return 'nothing-ran';
  if (code !== 'SERVICE_UNAVAILABLE' || owner === undefined || !context.unavailableServices.has(owner)) return undefined;
  return context.servicesThatMayHaveRun.has(owner) ? 'may-have-run' : 'nothing-ran';
}

/** A payload that carries a TEMPORARILY_UNAVAILABLE error and nothing else (contract section 4: nothing was changed). */
function isOutagePayload(value: unknown): boolean {
  if (!isRecord(value) || !isRecord(value.error) || value.error.code !== 'TEMPORARILY_UNAVAILABLE') return false;
  return Object.entries(value).every(([member, content]) => member === 'error' || member === '__typename' || content === null);
}

/**
 * Whether an answer shows that the mutation ran nothing, read from its structure, never its text (a
 * strategy's description may hold any words): every root field is an outage payload, or is null with
 * an outage error of its own saying that nothing ran; a retry may run it again once the outage is
 * over. Any other answer is kept for the retries, since running it again could repeat what ran
 * (Stripe keeps any answer once the request began to run, errors included): a partial one (an order
 * committed whose fills' subgraph was down, one root field of two that ran, whatever became of the
 * other), and one whose subgraph got the request and did not answer (it may have run).
 */
function ranNothing(answer: string, claim: Claim, owners: ReadonlyMap<string, string>): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer);
  } catch {
    return false;
  }
  if (!isRecord(parsed) || claim.rootFields.length === 0) return false;
  const data = isRecord(parsed.data) ? parsed.data : {};
  const errors: unknown[] = Array.isArray(parsed.errors) ? parsed.errors : [];
  return claim.rootFields.every(({ key, name }) => {
    const owner = owners.get(`Mutation.${name}`);
    // An outage payload says nothing ran, unless its subgraph's database connection broke mid-statement.
    if (data[key] !== null && data[key] !== undefined) return isOutagePayload(data[key]) && !(owner !== undefined && claim.context.servicesThatMayHaveRun.has(owner));
    const outages = errors.map((error) => outageOfRootField(error, key, owner, claim.context));
    return outages.includes('nothing-ran') && !outages.includes('may-have-run');
  });
}

const INTERRUPTED_MESSAGE =
  'The request first sent with this Idempotency-Key was interrupted and may have run: check whether it did, and send it again under a new key if not';

/**
 * The answer kept for a claim whose gateway died while its request ran (its lease lapsed): the
 * mutation may have run, so its repeats are told so, as when a subgraph got it and did not answer
 * (`may-have-run`), and run nothing. The root fields' payloads are non-null, so `data` is null.
 */
function interruptedAnswer(rootFields: readonly RootField[]): StoredAnswer {
  const errors = rootFields.length > 0 ? rootFields.map(({ key }) => ({ message: INTERRUPTED_MESSAGE, path: [key] })) : [{ message: INTERRUPTED_MESSAGE }];
  return {
    status: 200,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({ data: null, errors: errors.map((error) => ({ ...error, extensions: { code: 'SERVICE_UNAVAILABLE' } })) }),
  };
}

function payloadText(payload: unknown): string | undefined {
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return undefined;
}

/**
 * `Idempotency-Key` on mutations (contract section 4): registered on the GraphQL route after the
 * authentication hook, so the key is the account's and the rate limit has already been taken. The
 * answer is stored before it is sent, so a client that saw it and repeats is always replayed; when
 * storing it fails, it is tried again for a minute while the claim is renewed (repeats get 409 meanwhile).
 *
 * A request the caller's key may not make (a root field outside its scopes) is left to Apollo's scope
 * check, which answers FORBIDDEN and runs nothing: keys are per account, so without this a read-only
 * key of the account would be replayed another key's answer (a webhook's signing secret among them),
 * and a refusal, which belongs to the key, would be replayed to the account's other keys.
 *
 * The gateway timeout answers 504 while the mutation may still be running. Its claim is neither
 * released nor answered with the 504: the answer the mutation produces later is what its retries get
 * (the route's handler is wrapped for it, since Fastify drops an answer that comes after the 504). Until
 * then a retry gets 409. The claim's lease is renewed while the request runs, so it lapses only when
 * the gateway that runs it has died, however long the mutation takes (or when there is no answer to
 * keep: the handler failed after the 504, or storing the answer failed for a minute); then its retries
 * are answered that it may have run (`interruptedAnswer`) and run nothing. An answer whose mutation may have run in a subgraph that
 * did not answer (`may-have-run`) is kept like any other: its retries are replayed that outage and run
 * nothing, and a caller who finds that the mutation did not run sends it again under a new key.
 */
export function registerIdempotency(
  routes: FastifyInstance,
  store: IdempotencyStore,
  identityOf: (request: FastifyRequest) => GatewayContext | undefined,
  rules: RootFieldRules,
  log: Logger,
): BackgroundLoop {
  const claims = new WeakMap<FastifyRequest, Claim>();

  const keepRetrying = async (request: FastifyRequest, claim: Claim, answer: StoredAnswer) => {
    const giveUpAt = Date.now() + KEEP_ANSWER_RETRY_MS;
    for (let delay = KEEP_ANSWER_FIRST_DELAY_MS; ; delay = Math.min(delay * 2, KEEP_ANSWER_MAX_DELAY_MS)) {
      if (Date.now() + delay > giveUpAt) {
        // The claim lapses after its lease, and then a retry is answered that the mutation may have run.
        log.error({ requestId: String(request.id) }, 'keeping an idempotent answer failed for a minute; giving its claim up to its lease');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      try {
        await store.complete(claim.accountId, claim.key, answer);
        return;
      } catch (error) {
        log.warn({ err: error, requestId: String(request.id) }, 'keeping an idempotent answer failed; trying again');
      }
    }
  };

  const settle = async (request: FastifyRequest, claim: Claim, answer: StoredAnswer | undefined) => {
    if (claim.settled) return;
    claim.settled = true;
    // Without an answer to judge (a handler that failed after the 504), the claim is left to its lease.
    if (!answer) {
      clearInterval(claim.leaseRenewal);
      return;
    }
    const released = ranNothing(answer.body, claim, rules.owners);
    try {
      if (released) await store.release(claim.accountId, claim.key);
      else await store.complete(claim.accountId, claim.key, answer);
    } catch (error) {
      log.error({ err: error, requestId: String(request.id) }, 'keeping an idempotent answer failed');
      // The answer goes out now; repeats get 409 until it is kept. A release that failed lapses instead.
      if (!released) {
        void keepRetrying(request, claim, answer).finally(() => clearInterval(claim.leaseRenewal));
        return;
      }
    }
    clearInterval(claim.leaseRenewal);
  };

  const answerOf = (reply: FastifyReply, payload: unknown) => {
    const body = payloadText(payload);
    return body === undefined ? undefined : { status: reply.statusCode, contentType: String(reply.getHeader('content-type') ?? 'application/json'), body };
  };

  routes.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers['idempotency-key'];
    const context = identityOf(request);
    if (header === undefined || reply.sent || !context) return;
    const body = graphqlBody(request);
    const mutation = typeof body?.query === 'string' ? mutationOf(body.query, operationNameOf(body)) : undefined;
    if (!mutation) return;
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (!KEY_PATTERN.test(key)) {
      return reply.code(400).send({ detail: 'Idempotency-Key must be 1 to 255 printable ASCII characters' });
    }
    if (nestedDeeperThan(body?.variables, MAX_VARIABLES_DEPTH)) {
      return reply.code(400).send(rootFieldErrorsBody(body, `The variables nest deeper than ${MAX_VARIABLES_DEPTH} levels`, 'BAD_REQUEST'));
    }
    if (refusedFields(rules, mutation.document, mutation.operation, scopeSet(context.caller.scopes)).length > 0) return;
    const { accountId } = context.caller;
    // `__typename` runs nothing and is never null: it says nothing of whether the mutation ran; nor
    // does a root field the client skipped.
    const variables = isRecord(body?.variables) ? body.variables : undefined;
    const rootFields = rootFieldsOf(mutation.document, mutation.operation, surelySkippedOut(mutation.operation, variables)).filter(({ name }) => !name.startsWith('__'));
    const claim = await store.claim(accountId, key, requestHash(body as Record<string, unknown>), new Date(), interruptedAnswer(rootFields));
    // The 504 went out while claiming: the handler will not run, so neither must the claim stay.
    if (gatewayTimedOut(request) || reply.sent) {
      if (claim.kind === 'claimed') {
        await store.release(accountId, key).catch((error: unknown) => log.error({ err: error, requestId: String(request.id) }, 'releasing an idempotency claim failed'));
      }
      return;
    }
    switch (claim.kind) {
      case 'claimed': {
        const leaseRenewal = setInterval(() => {
          store.renewLease(accountId, key, new Date()).catch((error: unknown) => log.warn({ err: error, requestId: String(request.id) }, 'renewing an idempotency claim failed'));
        }, store.leaseMs / 3);
        leaseRenewal.unref();
        const running: Claim = {
          accountId,
          key,
          rootFields,
          context,
          settled: false,
          handler: 'waiting',
          closed: false,
          leaseRenewal,
        };
        claims.set(request, running);
        // A backstop: once the handler has ended and the connection is gone, no answer will settle the claim.
        reply.raw.once('close', () => {
          running.closed = true;
          if (running.handler === 'finished') void settle(request, running, undefined);
        });
        return;
      }
      case 'replay':
        return reply
          .code(claim.answer.status)
          .header('content-type', claim.answer.contentType)
          .header('Idempotent-Replayed', 'true')
          .send(claim.answer.body);
      case 'different-request':
        return reply.code(422).send({ detail: 'Idempotency-Key was used with a different request' });
      case 'in-progress':
        return reply.code(409).send({ detail: 'A request with this Idempotency-Key is in progress' });
    }
  });

  // The GraphQL handler's own answer, which after a 504 (or a closed connection) reaches no client and
  // no onSend hook.
  routes.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const claim = claims.get(request);
      if (claim) claim.handler = 'running';
      let payload: unknown;
      try {
        payload = await handler.call(this, request, reply);
      } catch (error) {
        if (claim) claim.handler = 'finished';
        if (claim && (gatewayTimedOut(request) || claim.closed)) await settle(request, claim, undefined);
        throw error;
      }
      if (claim) claim.handler = 'finished';
      if (claim && (gatewayTimedOut(request) || claim.closed)) await settle(request, claim, answerOf(reply, payload));
      return payload;
    };
  });

  routes.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    // The 504 is not the mutation's answer: the handler settles the claim when it ends.
    if (!claim || claim.settled || gatewayTimedOut(request)) return payload;
    await settle(request, claim, answerOf(reply, payload));
    return payload;
  });

  return startLoop(
    'idempotency-purge',
    async () => {
      await store.purgeExpired(new Date());
      return PURGE_INTERVAL_MS;
    },
    log,
    { errorDelayMs: PURGE_INTERVAL_MS },
  );
}
