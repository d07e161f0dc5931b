import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { GraphQLError } from 'graphql';
import { AssertionIssuer } from '@ots/shared/assertion';
import type { Config } from '@ots/shared/config';
import { decideKey, hashApiKey, isWellFormedApiKey, type ApiKeyStore } from '@ots/accounts';
import type { GatewayContext } from './data-source.ts';
import { KeyLookups } from './failed-auth.ts';
import { asksForPersistedQuery, graphqlBody, operationNameOf } from './graphql-body.ts';
import { RateLimiter, SharedRateLimiter } from './rate-limit.ts';
import { variantABody } from './unauthenticated.ts';

const INVALID_KEY = { detail: 'Invalid or expired API key' };
const ACCESS_DISABLED = { detail: 'API access is not enabled for this account' };

function tooManyRequests(reply: FastifyReply, retryAfterSeconds: number) {
  return reply
    .code(429)
    .header('Retry-After', String(Math.max(1, retryAfterSeconds)))
    .send({ detail: 'Too many requests' });
}

export interface Authentication {
  /** A Fastify preHandler: answers the request itself unless the caller holds a live key. */
  authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;
  /** The context of a request that `authenticate` let through. */
  identityOf: (request: FastifyRequest) => GatewayContext | undefined;
}

/**
 * Contract section 5, answered before GraphQL runs: Variant A for a missing or empty key, 401 for
 * any key that is not a live, current key, 403 for an account without API access; then the per-key
 * rate limit, and a signed assertion of the caller for the subgraphs.
 */
export function createAuthentication(config: Config, keyStore: ApiKeyStore, redis: Redis | undefined): Authentication {
  const limits = config.limits;
  const keyLimiter = new SharedRateLimiter(
    new RateLimiter(limits.rateLimitPerSecond, limits.rateLimitBurst, 'api-key'),
    redis,
    config.redisKeyPrefix,
    limits.gatewayReplicas,
  );
  const failedAuthLimiter = new RateLimiter(limits.failedAuthPerSecond, limits.failedAuthBurst, 'failed-auth');
  const keyLookups = new KeyLookups(keyStore, limits.keyLookupConcurrency);
  if (!config.assertionPrivateKey) throw new Error('the gateway needs ASSERTION_PRIVATE_KEY to sign assertions');
  const assertions = new AssertionIssuer(config.assertionPrivateKey, config.assertionTtlSeconds);
  const identities = new WeakMap<FastifyRequest, GatewayContext>();

  const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
    if (Array.isArray(request.body)) {
      return reply.code(400).send({ detail: 'Batched requests are not supported: send one operation per request' });
    }
    const body = graphqlBody(request);
    if (body && asksForPersistedQuery(body)) {
      return reply.code(400).send({
        data: null,
        errors: [{ message: 'Persisted queries are not supported: send the whole document in "query"', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }],
      });
    }
    if (!body || typeof body.query !== 'string' || body.query.trim() === '') {
      return reply.code(400).send({
        data: null,
        errors: [{ message: 'The body must be a JSON object with a string member "query"', extensions: { code: 'BAD_REQUEST' } }],
      });
    }
    const header = request.headers['x-api-key'];
    const apiKey = typeof header === 'string' ? header.trim() : '';
    if (apiKey === '') {
      try {
        return reply.code(200).send(variantABody(body.query, operationNameOf(body), limits.tokens));
      } catch (error) {
        const message = error instanceof GraphQLError ? error.message : 'The document could not be parsed';
        const code = error instanceof GraphQLError && error.extensions.code === 'BAD_REQUEST' ? 'BAD_REQUEST' : 'GRAPHQL_PARSE_FAILED';
        return reply.code(400).send({ data: null, errors: [{ message, extensions: { code } }] });
      }
    }
    if (config.production && !config.tls && request.protocol !== 'https') {
      return reply.code(400).send({ detail: 'API keys are accepted over HTTPS only' });
    }

    const address = request.ip;
    const refuse = (status: 401 | 403) => {
      const limited = failedAuthLimiter.take(address);
      if (!limited.allowed) return tooManyRequests(reply, limited.retryAfterSeconds);
      if (status === 403) return reply.code(403).send(ACCESS_DISABLED);
      return reply.code(401).header('WWW-Authenticate', 'ApiKey header="X-API-Key"').send(INVALID_KEY);
    };
    if (!isWellFormedApiKey(apiKey)) return refuse(401);

    // Every well-formed key is looked up, whatever its address did before (failed-auth.ts says why).
    const record = await keyLookups.lookup(hashApiKey(config.apiKeyHmacSecret, apiKey), address, reply);
    if (record === undefined) return reply;
    const decision = decideKey(record, Date.now(), address);
    if (decision.kind === 'address-refused') {
      const agent = request.headers['user-agent'];
      void keyStore.recordAddressRefusal(decision.apiKeyId, address, typeof agent === 'string' ? agent.slice(0, 512) : null);
      // Answered exactly as an invalid key: a prober learns nothing of the key or its account.
      return refuse(401);
    }
    if (decision.kind === 'invalid') return refuse(401);
    if (decision.kind === 'access-disabled') return refuse(403);

    const rate = await keyLimiter.take(decision.apiKeyId);
    reply.headers(keyLimiter.headers(rate));
    if (!rate.allowed) return tooManyRequests(reply, rate.retryAfterSeconds);

    keyStore.recordUse(decision.apiKeyId);
    const caller = { accountId: decision.accountId, apiKeyId: decision.apiKeyId, scopes: decision.scopes };
    identities.set(request, {
      caller,
      assertion: assertions.tokenFor(caller),
      requestId: String(request.id),
      unavailableServices: new Set(),
    });
    return undefined;
  };

  return { authenticate, identityOf: (request) => identities.get(request) };
}
