import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import proxyAddr from '@fastify/proxy-addr';
import type { FastifyInstance } from 'fastify';
import { GraphQLError, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { GatewayContext } from '../data-source.ts';
import type { AuthorisedKey, KeyAuthorisation } from '../authentication.ts';
import type { EndReason, EventStream } from './event-stream.ts';
import { tooManyStreams, type StreamServices } from './services.ts';
import { prepareSubscription, type StreamContext } from './schema.ts';

const WS_PATH = '/graphql/ws';

/** Bytes a socket may hold unsent before its streams wait. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** A subscribe message is a GraphQL request: the same bound as a /graphql body. */
const MAX_MESSAGE_BYTES = 100 * 1024;

/** The contract's close codes, and graphql-ws's for a full quota; 1001 (going away) lets a client reconnect elsewhere. */
const CLOSE = {
  invalidKey: [4401, 'Invalid or expired API key'],
  accessDisabled: [4403, 'API access is not enabled for this account'],
  tooManyRequests: [4429, 'Too many requests'],
  httpsOnly: [4400, 'API keys are accepted over HTTPS only'],
  shutdown: [1001, 'The server is restarting: reconnect'],
} as const;

type Connection = {
  caller?: GatewayContext['caller'];
  key?: AuthorisedKey;
};

type StreamArgs = ExecutionArgs & { contextValue: StreamContext & { stream?: EventStream } };

/**
 * GraphQL over WebSocket, the `graphql-transport-ws` subprotocol served by `graphql-ws` at
 * `/graphql/ws`. The key comes in the upgrade request's X-API-Key header or, for clients that
 * cannot set headers, in the connection_init payload; section 5's verdict closes the socket with
 * 4401 or 4403. A revoked key's or disabled account's connection is closed the same way within the
 * second; the server's pings are the heartbeat.
 */
export function attachWebSocketServer(app: FastifyInstance, services: StreamServices): { close(): Promise<void> } {
  const { authentication, registry, limits, schema } = services;
  const server = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (new URL(request.url ?? '/', 'http://gateway').pathname !== WS_PATH) {
      socket.destroy();
      return;
    }
    server.handleUpgrade(request, socket, head, (webSocket) => server.emit('connection', webSocket, request));
  };
  app.server.on('upgrade', onUpgrade);

  // The client's address and scheme as Fastify gives them for /graphql: from X-Forwarded-* only behind a proxy TRUST_PROXY names.
  const trusted = services.config.trustProxy ? proxyAddr.compile(services.config.trustProxy) : undefined;
  const clientOf = (request: IncomingMessage) => {
    const encrypted = (request.socket as TLSSocket).encrypted === true;
    const agent = request.headers['user-agent'];
    const userAgent = typeof agent === 'string' ? agent : undefined;
    if (!trusted) return { address: request.socket.remoteAddress ?? '', protocol: encrypted ? 'https' : 'http', userAgent };
    const forwardedProto = String(request.headers['x-forwarded-proto'] ?? '').split(',')[0]?.trim();
    const fromProxy = trusted(request.socket.remoteAddress ?? '', 0);
    return { address: proxyAddr(request, trusted), protocol: encrypted ? 'https' : fromProxy && forwardedProto ? forwardedProto : 'http', userAgent };
  };
  const closeWith = (socket: WebSocket, [code, reason]: readonly [number, string]) => socket.close(code, reason);
  const closeFor = (decision: Extract<KeyAuthorisation, { kind: 'refused' }>) =>
    decision.status === 403 ? CLOSE.accessDisabled : decision.status === 429 ? CLOSE.tooManyRequests : decision.status === 400 ? CLOSE.httpsOnly : CLOSE.invalidKey;

  useServer<Record<string, unknown> | undefined, Connection>(
    {
      schema,
      onConnect: async (ctx) => {
        const header = ctx.extra.request.headers['x-api-key'];
        const fromInit = ctx.connectionParams?.['X-API-Key'] ?? ctx.connectionParams?.['x-api-key'];
        const apiKey = (typeof header === 'string' && header.trim()) || (typeof fromInit === 'string' ? fromInit.trim() : '');
        if (apiKey === '') {
          closeWith(ctx.extra.socket, CLOSE.invalidKey);
          return false;
        }
        const decision = await authentication.authoriseKey(apiKey, { ...clientOf(ctx.extra.request), connection: ctx.extra.socket });
        if (decision.kind === 'abandoned') return false;
        if (decision.kind === 'refused') {
          closeWith(ctx.extra.socket, closeFor(decision));
          return false;
        }
        ctx.extra.caller = decision.identity.caller;
        ctx.extra.key = decision.key;
        return true;
      },
      onSubscribe: async (ctx, _id, payload): Promise<StreamArgs | readonly GraphQLError[]> => {
        const prepared = prepareSubscription(schema, services.config.limits, payload);
        if (!prepared.ok) return prepared.errors;
        // graphql-ws subscribes only after onConnect accepted the connection, which set both.
        const { caller, key } = ctx.extra;
        if (!caller || !key) return [new GraphQLError('Invalid or expired API key', { extensions: { code: 'UNAUTHENTICATED' } })];
        if (await registry.full(key.apiKeyId)) return [tooManyStreams(limits.perKey)];
        const socket = ctx.extra.socket;
        const contextValue: StreamArgs['contextValue'] = {
          openStream: async (args) => {
            const stream = await services.openStream(caller, key, args, {
              hasRoom: (opened) => opened.unwritten < 64 && socket.bufferedAmount < MAX_BUFFERED_BYTES,
              onEnd: (reason: EndReason) => {
                if (reason === 'key-invalid') closeWith(socket, CLOSE.invalidKey);
                if (reason === 'access-disabled') closeWith(socket, CLOSE.accessDisabled);
                if (reason === 'shutdown') closeWith(socket, CLOSE.shutdown);
              },
            });
            contextValue.stream = stream;
            return stream;
          },
        };
        return { schema, document: prepared.document, operationName: prepared.operationName, variableValues: prepared.variables, contextValue };
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
      for (const socket of server.clients) closeWith(socket, CLOSE.shutdown);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
