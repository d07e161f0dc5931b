import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parse } from 'graphql';
import type { IdempotencyStore } from '@ots/accounts';
import { startLoop, type BackgroundLoop } from '@ots/shared/background';
import type { Logger } from '@ots/shared/logger';
import type { GatewayContext } from './data-source.ts';
import { graphqlBody, operationNameOf } from './graphql-body.ts';
import { selectedOperation } from './root-fields.ts';

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
const OUTAGE_CODES = ['"TEMPORARILY_UNAVAILABLE"', '"SERVICE_UNAVAILABLE"'];
const PURGE_INTERVAL_MS = 10 * 60_000;

interface Claim {
  accountId: string;
  key: string;
  settled: boolean;
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

function isMutation(query: string, operationName: string | undefined): boolean {
  try {
    return selectedOperation(parse(query), operationName).operation === 'mutation';
  } catch {
    // A document that does not parse or names no operation runs nothing: Apollo answers it as usual.
    return false;
  }
}

/**
 * An answer that a retry with the same key should be able to improve on is not kept: a dependency
 * outage (TEMPORARILY_UNAVAILABLE on a payload or at the top, SERVICE_UNAVAILABLE for a subgraph that
 * did not answer) and our own 5xx failures, which changed nothing or will complete under the natural ids. A gateway timeout (504) is kept in
 * progress instead, since the mutation may still be running: a retry after the lease runs it again.
 */
function disposition(status: number, body: string): 'keep' | 'release' | 'hold' {
  if (status === 504) return 'hold';
  if (status >= 500) return 'release';
  return OUTAGE_CODES.some((code) => body.includes(code)) ? 'release' : 'keep';
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
 */
export function registerIdempotency(
  routes: FastifyInstance,
  store: IdempotencyStore,
  identityOf: (request: FastifyRequest) => GatewayContext | undefined,
  log: Logger,
): BackgroundLoop {
  const claims = new WeakMap<FastifyRequest, Claim>();

  routes.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers['idempotency-key'];
    const identity = identityOf(request);
    if (header === undefined || reply.sent || !identity) return;
    const body = graphqlBody(request);
    if (typeof body?.query !== 'string' || !isMutation(body.query, operationNameOf(body))) return;
    const key = Array.isArray(header) ? header.join(', ') : header;
    if (!KEY_PATTERN.test(key)) {
      return reply.code(400).send({ detail: 'Idempotency-Key must be 1 to 255 printable ASCII characters' });
    }
    const { accountId } = identity.caller;
    const claim = await store.claim(accountId, key, requestHash(body as Record<string, unknown>), new Date());
    switch (claim.kind) {
      case 'claimed':
        claims.set(request, { accountId, key, settled: false });
        return;
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

  routes.addHook('onSend', async (request, reply, payload) => {
    const claim = claims.get(request);
    if (!claim || claim.settled) return payload;
    claim.settled = true;
    const text = payloadText(payload);
    const status = reply.statusCode;
    const next = text === undefined ? 'release' : disposition(status, text);
    // A request whose connection closed before its answer still settles here when the answer is sent.
    try {
      if (next === 'keep') {
        const contentType = String(reply.getHeader('content-type') ?? 'application/json');
        await store.complete(claim.accountId, claim.key, { status, contentType, body: text! });
      } else if (next === 'release') {
        await store.release(claim.accountId, claim.key);
      }
    } catch (error) {
      // The answer still goes out; the key stays claimed until its lease ends, then a retry runs again.
      log.error({ err: error, requestId: String(request.id) }, 'keeping an idempotent answer failed');
    }
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
