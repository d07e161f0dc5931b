import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import type { IdempotencyStore } from '@ots/accounts';
import { startLoop, type BackgroundLoop } from '@ots/shared/background';
import type { Logger } from '@ots/shared/logger';
import { scopeSet, type ScopeRequirement } from '@ots/shared/scopes';
import type { GatewayContext } from './data-source.ts';
import { graphqlBody, operationNameOf } from './graphql-body.ts';
import { rootFieldsOf, selectedOperation, type RootField } from './root-fields.ts';
import { refusedRootFields } from './scopes.ts';

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
const PURGE_INTERVAL_MS = 10 * 60_000;

/** What the gateway knows of the supergraph's root fields. */
export interface RootFieldRules {
  /** The scopes each root field needs (`Mutation.submitOrder` → `[["orders:write"]]`). */
  required: ReadonlyMap<string, ScopeRequirement>;
  /** The subgraph that resolves each root field (`Mutation.submitOrder` → `orders`). */
  owners: ReadonlyMap<string, string>;
}

interface Claim {
  accountId: string;
  key: string;
  rootFields: RootField[];
  /** The request's context, which notes the subgraphs that did not answer. */
  context: GatewayContext;
  /** `timed-out`: the gateway's 504 went out while the mutation may still be running. */
  state: 'running' | 'timed-out' | 'settled';
  leaseRenewal: NodeJS.Timeout;
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

/**
 * An error of the root field `key` itself (not of a field below it) saying that it did not run: a
 * subgraph's TEMPORARILY_UNAVAILABLE, or SERVICE_UNAVAILABLE when the subgraph that did not answer is
 * the one owning the root field. Another subgraph's outage below a root field can null that root field
 * (GraphQL's null rule), and the gateway names the root field in its error, though its change committed.
 */
function rootFieldDidNotRun(error: unknown, key: string, owner: string | undefined, unavailable: ReadonlySet<string>): boolean {
  if (!isRecord(error) || !Array.isArray(error.path) || error.path.length !== 1 || error.path[0] !== key) return false;
  const code = isRecord(error.extensions) ? error.extensions.code : undefined;
  return code === 'TEMPORARILY_UNAVAILABLE' || (code === 'SERVICE_UNAVAILABLE' && owner !== undefined && unavailable.has(owner));
}

/** A payload that carries a TEMPORARILY_UNAVAILABLE error and nothing else (contract section 4: nothing was changed). */
function isOutagePayload(value: unknown): boolean {
  if (!isRecord(value) || !isRecord(value.error) || value.error.code !== 'TEMPORARILY_UNAVAILABLE') return false;
  return Object.entries(value).every(([member, content]) => member === 'error' || member === '__typename' || content === null);
}

/**
 * Whether an answer shows that no root field of the mutation changed anything, so that a retry with
 * the same key may run it again once the outage is over. Read from the answer's structure, never its
 * text (a strategy's description may hold any words): every root field is either null with an outage
 * error of its own or an outage payload. Any other answer, a partial one included (an order committed
 * whose fills' subgraph was down, one root field of two that ran), is kept for the retries.
 */
function nothingRan(answer: string, claim: Claim, owners: ReadonlyMap<string, string>): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer);
  } catch {
    return false;
  }
  if (!isRecord(parsed)) return false;
  const data = isRecord(parsed.data) ? parsed.data : {};
  const errors = Array.isArray(parsed.errors) ? parsed.errors : [];
  const unavailable = claim.context.unavailableServices;
  return (
    claim.rootFields.length > 0 &&
    claim.rootFields.every(({ key, name }) =>
      data[key] === null || data[key] === undefined
        ? errors.some((error) => rootFieldDidNotRun(error, key, owners.get(`Mutation.${name}`), unavailable))
        : isOutagePayload(data[key]),
    )
  );
}

function payloadText(payload: unknown): string | undefined {
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return undefined;
}

/**
 * `Idempotency-Key` on mutations (contract section 4): registered on the GraphQL route after the
 * authentication hook, so the key is the account's and the rate limit has already been taken. The
 * answer is stored before it is sent, so a client that saw it and repeats is always replayed.
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
 * the gateway that runs it has died, however long the mutation takes.
 */
export function registerIdempotency(
  routes: FastifyInstance,
  store: IdempotencyStore,
  identityOf: (request: FastifyRequest) => GatewayContext | undefined,
  rules: RootFieldRules,
  log: Logger,
): BackgroundLoop {
  const claims = new WeakMap<FastifyRequest, Claim>();

  const settle = async (request: FastifyRequest, claim: Claim, answer: { status: number; contentType: string; body: string } | undefined) => {
    claim.state = 'settled';
    clearInterval(claim.leaseRenewal);
    // Without an answer to judge (a handler that failed after the 504), the claim is left to its lease.
    if (!answer) return;
    try {
      if (nothingRan(answer.body, claim, rules.owners)) await store.release(claim.accountId, claim.key);
      else await store.complete(claim.accountId, claim.key, answer);
    } catch (error) {
      // The answer still goes out; the key stays claimed until its lease ends, then a retry runs again.
      log.error({ err: error, requestId: String(request.id) }, 'keeping an idempotent answer failed');
    }
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
    if (refusedRootFields(rules.required, mutation.document, mutation.operation, scopeSet(context.caller.scopes)).length > 0) return;
    const { accountId } = context.caller;
    const claim = await store.claim(accountId, key, requestHash(body as Record<string, unknown>), new Date());
    switch (claim.kind) {
      case 'claimed': {
        const leaseRenewal = setInterval(() => {
          store.renewLease(accountId, key, new Date()).catch((error: unknown) => log.warn({ err: error, requestId: String(request.id) }, 'renewing an idempotency claim failed'));
        }, store.leaseMs / 3);
        leaseRenewal.unref();
        claims.set(request, { accountId, key, rootFields: rootFieldsOf(mutation.document, mutation.operation), context, state: 'running', leaseRenewal });
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

  // The GraphQL handler's own answer, which after a 504 reaches no client and no onSend hook.
  routes.addHook('onRoute', (route) => {
    const handler = route.handler;
    route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      let payload: unknown;
      try {
        payload = await handler.call(this, request, reply);
      } catch (error) {
        const claim = claims.get(request);
        if (claim?.state === 'timed-out') await settle(request, claim, undefined);
        throw error;
      }
      const claim = claims.get(request);
      if (claim?.state === 'timed-out') await settle(request, claim, answerOf(reply, payload));
      return payload;
    };
  });

  routes.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    if (!claim || claim.state === 'settled') return payload;
    if (reply.statusCode === 504) {
      claim.state = 'timed-out';
      return payload;
    }
    // A request whose connection closed before its answer still settles here when the answer is sent.
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
