import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { GraphQLError } from 'graphql';
import { AssertionIssuer } from '@ots/shared/assertion';
import type { GatewaySettings } from '@ots/shared/config';
import { decideKey, failedAuthClientOf, hashApiKey, isWellFormedApiKey, type ApiKeyStore } from '@ots/accounts';
import type { GatewayContext } from './data-source.ts';
import { KeyLookups } from './failed-auth.ts';
import { asksForPersistedQuery, graphqlBody, operationNameOf } from './graphql-body.ts';
import { RateLimiter, SharedRateLimiter, type RateState } from './rate-limit.ts';
import { variantABody } from './unauthenticated.ts';

const INVALID_KEY = { detail: 'Invalid or expired API key' };
const ACCESS_DISABLED = { detail: 'API access is not enabled for this account' };

function tooManyRequests(retryAfterSeconds: number, headers: Record<string, string> = {}): KeyAuthorisation {
  return { kind: 'refused', status: 429, headers: { ...headers, 'Retry-After': String(Math.max(1, retryAfterSeconds)) }, body: { detail: 'Too many requests' } };
}

/** Where a key was presented from: the client's address and scheme, and the connection whose close abandons the look-up. */
interface ClientConnection {
  address: string;
  protocol: string;
  userAgent?: string;
  connection: NodeJS.EventEmitter;
}

/** A key `authenticate` or `authoriseKey` let through: enough to check it again later, and when it expires. */
export interface AuthorisedKey {
  apiKeyId: string;
  keyHash: Buffer;
  expiresAt: number | null;
  /** The client address the key was presented from, checked again against the key's allowed addresses. */
  address: string;
}

/** Section 5's verdict on a presented key, answered the same on /graphql and the streams. */
export type KeyAuthorisation =
  | { kind: 'refused'; status: 400 | 401 | 403 | 429; headers: Record<string, string>; body: { detail: string } }
  /** The client left while its look-up waited: nothing to answer. */
  | { kind: 'abandoned' }
  | { kind: 'authorised'; headers: Record<string, string>; identity: GatewayContext; key: AuthorisedKey };

/** Section 5's verdict now on a key authorised earlier: while it holds, the key's scopes and expiry as they are now (a roll moves the expiry). */
export type KeyStatus = { kind: 'authenticated'; caller: GatewayContext['caller']; expiresAt: number | null } | { kind: 'invalid' } | { kind: 'access-disabled' };

export interface Authentication {
  /** A Fastify preHandler: answers the request itself unless the caller holds a live key. */
  authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;
  /** The context of a request that `authenticate` let through. */
  identityOf: (request: FastifyRequest) => GatewayContext | undefined;
  /** The key of a request that `authenticate` let through, for what outlives the request (a stream). */
  keyOf: (request: FastifyRequest) => AuthorisedKey | undefined;
  /** Section 5 for a presented key (not empty), then the per-key rate limit: what /graphql and the streams both apply. */
  authoriseKey: (apiKey: string, client: ClientConnection) => Promise<KeyAuthorisation>;
  /** One token of the key's rate limit (section 8), from the bucket `authoriseKey` takes from: for a request on a connection authorised earlier (a WebSocket subscribe). */
  takeRateToken: (apiKeyId: string) => Promise<RateState>;
  /** What section 5 says of a key authorised earlier, from the client address it was presented from, as the key cache knows it now. */
  keyStatus: (key: AuthorisedKey) => Promise<KeyStatus>;
  /** A fresh signed assertion for a caller authorised earlier (assertions are short-lived; a stream outlives one). */
  assertionFor: (caller: GatewayContext['caller']) => string;
}

/**
 * Contract section 5, answered before GraphQL runs: Variant A for a missing or empty key, 401 for
 * any key that is not a live, current key, 403 for an account without API access; then the per-key
 * rate limit, and a signed assertion of the caller for the subgraphs.
 */
export function createAuthentication(config: GatewaySettings, keyStore: ApiKeyStore, redis: Redis | undefined): Authentication {
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
  const keys = new WeakMap<FastifyRequest, AuthorisedKey>();

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
    const decision = await authoriseKey(apiKey, { address: request.ip, protocol: request.protocol, userAgent: request.headers['user-agent'], connection: reply.raw });
    if (decision.kind === 'abandoned') return reply;
    reply.headers(decision.headers);
    if (decision.kind === 'refused') return reply.code(decision.status).send(decision.body);
    identities.set(request, { ...decision.identity, requestId: String(request.id) });
    keys.set(request, decision.key);
    return undefined;
  };

  const authoriseKey = async (apiKey: string, client: ClientConnection): Promise<KeyAuthorisation> => {
    if (config.production && !config.tls && client.protocol !== 'https') {
      return { kind: 'refused', status: 400, headers: {}, body: { detail: 'API keys are accepted over HTTPS only' } };
    }
    const refuseInvalid = (): KeyAuthorisation => {
      const limited = failedAuthLimiter.take(failedAuthClientOf(client.address));
      if (!limited.allowed) return tooManyRequests(limited.retryAfterSeconds);
      return { kind: 'refused', status: 401, headers: { 'WWW-Authenticate': 'ApiKey header="X-API-Key"' }, body: INVALID_KEY };
    };
    if (!isWellFormedApiKey(apiKey)) return refuseInvalid();

    // Every well-formed key is looked up, whatever its address did before (failed-auth.ts says why).
    const keyHash = hashApiKey(config.apiKeyHmacSecret, apiKey);
    const record = await keyLookups.lookup(keyHash, client.address, client.connection);
    if (record === undefined) return { kind: 'abandoned' };
    const decision = decideKey(record, Date.now(), client.address);
    if (decision.kind === 'address-refused') {
      void keyStore.recordAddressRefusal(decision.apiKeyId, client.address, client.userAgent);
      // Answered exactly as an invalid key: a prober learns nothing of the key or its account.
      return refuseInvalid();
    }
    if (decision.kind === 'invalid') return refuseInvalid();

    // A valid key, of an enabled account or not, is bounded by its own rate limit, never by what
    // other requests from its address did: its owner learns that access is off, not to retry.
    const rate = await keyLimiter.take(decision.apiKeyId);
    const headers = keyLimiter.headers(rate);
    if (!rate.allowed) return tooManyRequests(rate.retryAfterSeconds, headers);
    if (decision.kind === 'access-disabled') return { kind: 'refused', status: 403, headers, body: ACCESS_DISABLED };

    keyStore.recordUse(decision.apiKeyId);
    const caller = { accountId: decision.accountId, apiKeyId: decision.apiKeyId, scopes: decision.scopes };
    return {
      kind: 'authorised',
      headers,
      key: { apiKeyId: decision.apiKeyId, keyHash, expiresAt: record!.expiresAt, address: client.address },
      identity: { caller, assertion: assertions.tokenFor(caller), requestId: '', unavailableServices: new Set(), servicesThatMayHaveRun: new Set() },
    };
  };

  const keyStatus = async (key: AuthorisedKey): Promise<KeyStatus> => {
    const record = await keyStore.lookup(key.keyHash);
    const decision = decideKey(record, Date.now(), key.address);
    if (decision.kind === 'access-disabled') return { kind: 'access-disabled' };
    if (decision.kind !== 'authenticated') return { kind: 'invalid' };
    return { kind: 'authenticated', caller: { accountId: decision.accountId, apiKeyId: decision.apiKeyId, scopes: decision.scopes }, expiresAt: record!.expiresAt };
  };

  return {
    authenticate,
    identityOf: (request) => identities.get(request),
    keyOf: (request) => keys.get(request),
    authoriseKey,
    takeRateToken: (apiKeyId) => keyLimiter.take(apiKeyId),
    keyStatus,
    assertionFor: (caller) => assertions.tokenFor(caller),
  };
}
