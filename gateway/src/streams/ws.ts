import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyInstance } from 'fastify';
import { GraphQLError, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { isDependencyOutage, TEMPORARILY_UNAVAILABLE_MESSAGE } from '@ots/shared/errors';
import { REQUEST_ID_HEADER } from '@ots/shared/subgraph-server';
import type { AuthorisedKey, KeyAuthorisation, KeyStatus } from '../authentication.ts';
import { reportUpgradeUse } from '../connections.ts';
import type { EndReason, EventStream } from './event-stream.ts';
import { KEY_CHECK_RETRY_MS, type StreamPlace } from './registry.ts';
import { tooManyStreams, type StreamServices } from './services.ts';
import { prepareSubscription, type StreamContext } from './schema.ts';

const WS_PATH = '/graphql/ws';

/** Bytes a socket may hold unsent before its streams wait. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** A subscribe message is a GraphQL request: the same bound as a /graphql body. */
const MAX_MESSAGE_BYTES = 100 * 1024;
/** How long a stream ended for a slow consumer waits for the socket to take its SLOW_CONSUMER message before the socket is closed. */
const SLOW_CONSUMER_CLOSE_MS = 2_000;

/** The contract's close codes, and graphql-ws's for a full quota; 1001 (going away) lets a client reconnect elsewhere. */
const CLOSE = {
  invalidKey: [4401, 'Invalid or expired API key'],
  accessDisabled: [4403, 'API access is not enabled for this account'],
  // 1013 (Try Again Later), not 4429: graphql-ws's own client takes 4429 as fatal and never
  // reconnects, though a rate limit or a full socket allowance clears by itself.
  tooManyRequests: [1013, 'Too many requests'],
  httpsOnly: [4400, 'API keys are accepted over HTTPS only'],
  shutdown: [1001, 'The server is restarting: reconnect'],
  // Try Again Later: graphql-ws's client reconnects after it, where it takes 4500 as fatal.
  unavailable: [1013, 'The service is temporarily unavailable: reconnect'],
  // Not one of graphql-ws's fatal codes: its client may reconnect, and resume from the last cursor it received.
  slowConsumer: [4001, 'SLOW_CONSUMER: more than 1,000 events behind; resume from the last cursor received'],
} as const;

type Connection = {
  /** The upgrade request's id, sent back in its X-Request-Id header and logged with what goes wrong on the socket. */
  requestId?: string;
  /** The key as onConnect authorised it, from the socket's client address. */
  key?: AuthorisedKey;
  /** Places taken by subscribes whose operation has not started: the socket's close gives back any left. */
  places?: Set<StreamPlace>;
};

type StreamArgs = ExecutionArgs & { contextValue: StreamContext & { stream?: EventStream }; place: StreamPlace };

/**
 * GraphQL over WebSocket, the `graphql-transport-ws` subprotocol served by `graphql-ws` at
 * `/graphql/ws`. The key comes in the upgrade request's X-API-Key header or, for clients that
 * cannot set headers, in the connection_init payload; section 5's verdict closes the socket with
 * 4401 or 4403. Each subscribe looks at the key again, as /graphql does for each request, and runs
 * with its scopes as they are then. A revoked key's or disabled account's connection, streams or
 * not, is closed the same way within the second; the server's pings are the heartbeat. A key holds
 * at most `socketsPerKey` sockets on this gateway (1013 beyond), and one without a subscription is
 * idle to the connection cap, which may close it to make room. Each subscribe takes a token of the
 * key's rate limit, as each request does; over it, the subscribe is refused TOO_MANY_REQUESTS with
 * `retryAfterSeconds`, and the socket stays open. A key store that does not answer
 * (section 7's dependency outage) closes a connecting socket 1013, after which graphql-ws's client
 * reconnects, and refuses a subscribe TEMPORARILY_UNAVAILABLE; no error's own message reaches a client.
 */
export function attachWebSocketServer(app: FastifyInstance, services: StreamServices): { close(): Promise<void> } {
  const { authentication, registry, limits, schema } = services;
  const server = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const contexts = new WeakMap<WebSocket, { subscriptions: Record<string, unknown> }>();
  const requestIds = new WeakMap<IncomingMessage, string>();
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(request.url ?? '/', 'http://gateway').pathname !== WS_PATH) {
      socket.destroy();
      return;
    }
    requestIds.set(request, randomUUID());
    // Without a subscription, pending or open, the socket is idle: at the connection cap it may make room.
    server.handleUpgrade(request, socket, head, (webSocket) => {
      reportUpgradeUse(request.socket, () => Object.keys(contexts.get(webSocket)?.subscriptions ?? {}).length > 0);
      server.emit('connection', webSocket, request);
    });
  };
  app.server.on('upgrade', onUpgrade);
  server.on('headers', (headers, request) => headers.push(`${REQUEST_ID_HEADER}: ${requestIds.get(request)}`));
  /** A key store that did not answer is logged with the socket's request id; anything else is a bug, thrown on. */
  const outage = (error: unknown, requestId: string | undefined): boolean => {
    if (!isDependencyOutage(error)) return false;
    services.logger.warn({ err: error, reqId: requestId }, 'a dependency did not answer while a WebSocket key was checked');
    return true;
  };
  const tooManyRequests = (retryAfterSeconds: number) =>
    new GraphQLError(CLOSE.tooManyRequests[1], { extensions: { code: 'TOO_MANY_REQUESTS', http: { status: 429 }, retryAfterSeconds: Math.max(1, retryAfterSeconds) } });
  const temporarilyUnavailable = () => [new GraphQLError(TEMPORARILY_UNAVAILABLE_MESSAGE, { extensions: { code: 'TEMPORARILY_UNAVAILABLE' } })];

  // The client's address and scheme as Fastify gives them for /graphql: from X-Forwarded-* only behind a proxy TRUST_PROXY names.
  const trusted = services.config.trustProxy ? proxyAddr.compile(services.config.trustProxy) : undefined;
  const clientOf = (request: IncomingMessage) => {
    const encrypted = (request.socket as TLSSocket).encrypted === true;
    const agent = request.headers['user-agent'];
    const userAgent = typeof agent === 'string' ? agent : undefined;
    if (!trusted) return { address: request.socket.remoteAddress ?? '', protocol: encrypted ? 'https' : 'http', userAgent };
    // The last entry, as Fastify takes it: the one the trusted proxy appended, not what its client sent.
    const forwardedProto = String(request.headers['x-forwarded-proto'] ?? '').split(',').at(-1)?.trim();
    const fromProxy = trusted(request.socket.remoteAddress ?? '', 0);
    return { address: proxyAddr(request, trusted), protocol: encrypted ? 'https' : fromProxy && forwardedProto ? forwardedProto : 'http', userAgent };
  };
  const closeWith = (socket: WebSocket, [code, reason]: readonly [number, string]) => socket.close(code, reason);
  const closeFor = (decision: Extract<KeyAuthorisation, { kind: 'refused' }>) =>
    decision.status === 403 ? CLOSE.accessDisabled : decision.status === 429 ? CLOSE.tooManyRequests : decision.status === 400 ? CLOSE.httpsOnly : CLOSE.invalidKey;

  /** Closes a socket whose key section 5 now refuses, with the contract's code. */
  const closeRefused = (socket: WebSocket, status: KeyStatus) => {
    if (status.kind === 'invalid') closeWith(socket, CLOSE.invalidKey);
    if (status.kind === 'access-disabled') closeWith(socket, CLOSE.accessDisabled);
  };
  const recheck = async (socket: WebSocket, key: AuthorisedKey): Promise<KeyStatus> => {
    const status = await authentication.keyStatus(key);
    closeRefused(socket, status);
    return status;
  };
  // Sockets without streams too: the registry's checks see only the keys of open streams.
  const authorisedSockets = new Map<WebSocket, AuthorisedKey>();
  // How many each key holds: past `socketsPerKey` its next is refused, so one key's sockets cannot take every connection.
  const socketsOfKey = new Map<string, number>();
  // An expiry (or a rolled key's grace end) changes nothing in any store, so no key change announces it:
  // each socket is looked at again when its key's time is up, streams or not. An expiry only ever comes
  // nearer (a roll gives the old key a grace end; nothing extends one), so the nearest one seen is
  // followed: a look-up begun before a roll and answered after it says nothing new.
  const expiryChecks = new Map<WebSocket, { at: number; timer: NodeJS.Timeout }>();
  const followExpiry = (socket: WebSocket, expiresAt: number | null) => {
    const key = authorisedSockets.get(socket);
    const followed = expiryChecks.get(socket);
    if (expiresAt === null || !key || (followed && followed.at <= expiresAt && followed.at > Date.now())) return;
    clearTimeout(followed?.timer);
    // setTimeout waits at most 2³¹ − 1 ms (about 24 days); a later expiry is looked at then, and followed again.
    const wait = Math.min(Math.max(0, expiresAt - Date.now()) + 1, 2 ** 31 - 1);
    expiryChecks.set(socket, { at: Date.now() + wait, timer: setTimeout(() => checkSockets(key, [socket]), wait).unref() });
  };
  const forgetSocket = (socket: WebSocket) => {
    clearTimeout(expiryChecks.get(socket)?.timer);
    expiryChecks.delete(socket);
    const key = authorisedSockets.get(socket);
    if (!key) return;
    authorisedSockets.delete(socket);
    const left = (socketsOfKey.get(key.apiKeyId) ?? 1) - 1;
    if (left > 0) socketsOfKey.set(key.apiKeyId, left);
    else socketsOfKey.delete(key.apiKeyId);
  };
  const checkSockets = (key: AuthorisedKey, sockets: WebSocket[]) => {
    authentication.keyStatus(key).then(
      (status) => {
        for (const socket of sockets) {
          closeRefused(socket, status);
          if (status.kind === 'authenticated') followExpiry(socket, status.expiresAt);
        }
      },
      // A key store that does not answer (a database blip) is asked again until it does: the change may be the last for a long while.
      () => {
        setTimeout(() => {
          const open = sockets.filter((socket) => authorisedSockets.has(socket));
          if (open.length > 0) checkSockets(key, open);
        }, KEY_CHECK_RETRY_MS).unref();
      },
    );
  };
  const stopFollowingKeys = services.onKeysChanged(() => {
    // One look-up per key and client address, however many sockets share them: a change of any
    // account's key comes here, and a gateway may hold thousands of idle sockets.
    const sharing = new Map<string, { key: AuthorisedKey; sockets: WebSocket[] }>();
    for (const [socket, key] of authorisedSockets) {
      const group = `${key.apiKeyId}\n${key.address}`;
      const same = sharing.get(group);
      if (same) same.sockets.push(socket);
      else sharing.set(group, { key, sockets: [socket] });
    }
    for (const { key, sockets } of sharing.values()) checkSockets(key, sockets);
  });

  useServer<Record<string, unknown> | undefined, Connection>(
    {
      schema,
      // A thrown error closes its socket 4500 with the error's message as the reason outside
      // production, which could name a database host: the reason stays "Internal server error" everywhere.
      isProd: true,
      onConnect: async (ctx) => {
        contexts.set(ctx.extra.socket, ctx);
        ctx.extra.requestId = requestIds.get(ctx.extra.request);
        const header = ctx.extra.request.headers['x-api-key'];
        const fromInit = ctx.connectionParams?.['X-API-Key'] ?? ctx.connectionParams?.['x-api-key'];
        const apiKey = (typeof header === 'string' && header.trim()) || (typeof fromInit === 'string' ? fromInit.trim() : '');
        if (apiKey === '') {
          closeWith(ctx.extra.socket, CLOSE.invalidKey);
          return false;
        }
        let decision: KeyAuthorisation;
        try {
          decision = await authentication.authoriseKey(apiKey, { ...clientOf(ctx.extra.request), connection: ctx.extra.socket });
        } catch (error) {
          if (!outage(error, ctx.extra.requestId)) throw error;
          closeWith(ctx.extra.socket, CLOSE.unavailable);
          return false;
        }
        if (decision.kind === 'abandoned') return false;
        if (decision.kind === 'refused') {
          closeWith(ctx.extra.socket, closeFor(decision));
          return false;
        }
        // Closed while its key was looked up: nothing left to follow.
        if (ctx.extra.socket.readyState !== ctx.extra.socket.OPEN) return false;
        const held = socketsOfKey.get(decision.key.apiKeyId) ?? 0;
        if (held >= limits.socketsPerKey) {
          closeWith(ctx.extra.socket, [CLOSE.tooManyRequests[0], `At most ${limits.socketsPerKey} WebSocket connections per API key: close one first`]);
          return false;
        }
        ctx.extra.key = decision.key;
        authorisedSockets.set(ctx.extra.socket, decision.key);
        socketsOfKey.set(decision.key.apiKeyId, held + 1);
        followExpiry(ctx.extra.socket, decision.key.expiresAt);
        return true;
      },
      onClose: (ctx) => {
        forgetSocket(ctx.extra.socket);
        // A subscribe whose execution threw closed the socket without reaching onOperation.
        for (const place of ctx.extra.places ?? []) registry.release(place);
      },
      onSubscribe: async (ctx, _id, payload): Promise<StreamArgs | readonly GraphQLError[]> => {
        const socket = ctx.extra.socket;
        // graphql-ws subscribes only after onConnect accepted the connection, which set it.
        const authorised = ctx.extra.key;
        if (!authorised) return [new GraphQLError(CLOSE.invalidKey[1], { extensions: { code: 'UNAUTHENTICATED' } })];
        // Each subscribe is a request, as each POST /graphql/stream is: without its token, a subscribe and complete loop on one socket would read the feed unbounded.
        const rate = await authentication.takeRateToken(authorised.apiKeyId);
        if (!rate.allowed) return [tooManyRequests(rate.retryAfterSeconds)];
        const prepared = prepareSubscription(schema, services.config.limits, payload);
        if (!prepared.ok) return prepared.errors;
        // Revoked, expired, fenced off, disabled or changed in scope since the socket opened: what /graphql would answer now.
        let status: KeyStatus;
        try {
          status = await recheck(socket, authorised);
        } catch (error) {
          if (!outage(error, ctx.extra.requestId)) throw error;
          return temporarilyUnavailable();
        }
        if (status.kind === 'invalid') return [new GraphQLError(CLOSE.invalidKey[1], { extensions: { code: 'UNAUTHENTICATED' } })];
        if (status.kind === 'access-disabled') return [new GraphQLError(CLOSE.accessDisabled[1], { extensions: { code: 'FORBIDDEN' } })];
        const { caller } = status;
        const key = { ...authorised, expiresAt: status.expiresAt };
        const place = await registry.reserve(key.apiKeyId);
        if (!place) return [tooManyStreams(limits.perKey)];
        // Closed while the place was taken: its onClose has run already.
        if (socket.readyState !== socket.OPEN) {
          registry.release(place);
          return [new GraphQLError('The connection closed', { extensions: { code: 'BAD_REQUEST' } })];
        }
        (ctx.extra.places ??= new Set()).add(place);
        const contextValue: StreamArgs['contextValue'] = {
          openStream: async (args) => {
            const stream = await services.openStream(caller, key, args, {
              place,
              hasRoom: (opened) => opened.unwritten < 64 && socket.bufferedAmount < MAX_BUFFERED_BYTES,
              onEnd: (reason: EndReason) => {
                if (reason === 'key-invalid') closeWith(socket, CLOSE.invalidKey);
                if (reason === 'access-disabled') closeWith(socket, CLOSE.accessDisabled);
                if (reason === 'shutdown') closeWith(socket, CLOSE.shutdown);
                // The SLOW_CONSUMER message goes out when graphql-ws asks for the next message, which it
                // does once the socket took the last one. A client that stopped reading may never let
                // it: its socket is closed instead, with a reason that names it, queued behind every
                // item already sent, so that the last cursor the client receives is the one to resume from.
                if (reason === 'slow-consumer') {
                  setTimeout(() => {
                    if (!contextValue.stream?.finished) closeWith(socket, CLOSE.slowConsumer);
                  }, SLOW_CONSUMER_CLOSE_MS).unref();
                }
                // A key that lost `read` keeps its socket: each later subscribe looks again and is refused FORBIDDEN while it lacks it.
              },
            });
            contextValue.stream = stream;
            return stream;
          },
        };
        return { schema, document: prepared.document, operationName: prepared.operationName, variableValues: prepared.variables, contextValue, place };
      },
      // A subscription that did not open its stream (refused arguments, no `read`) gives back its place; one that did, when it closes.
      onOperation: (ctx, _id, _payload, args) => {
        const { place } = args as StreamArgs;
        ctx.extra.places?.delete(place);
        registry.release(place);
      },
      onNext: (_ctx, _id, _payload, args) => {
        (args as StreamArgs).contextValue.stream?.written();
      },
    },
    server,
    limits.heartbeatMs,
  );

  return {
    close: async () => {
      app.server.off('upgrade', onUpgrade);
      stopFollowingKeys();
      for (const socket of server.clients) closeWith(socket, CLOSE.shutdown);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
