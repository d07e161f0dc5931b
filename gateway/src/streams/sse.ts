import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createHandler } from 'graphql-sse';
import { REQUEST_ID_HEADER } from '@ots/shared/subgraph-server';
import type { LongLivedRoute } from '../timeouts.ts';
import type { EventStream } from './event-stream.ts';
import type { StreamServices } from './services.ts';
import { prepareSubscription, type StreamContext } from './schema.ts';

const SSE_PATH = '/graphql/stream';

/** Messages the transport may hold unwritten before the stream waits (the socket's own buffer aside). */
const MAX_UNWRITTEN = 64;

/**
 * GraphQL over SSE, The Guild's protocol in "distinct connections" mode, served by the
 * `graphql-sse` handler: `POST /graphql/stream`, authenticated exactly as /graphql (section 5's
 * answers come before the stream opens). Each `next` event carries the item's cursor as its SSE
 * `id:`, so that `Last-Event-ID` resumes after it; a comment line keeps an idle stream visibly alive.
 */
export async function registerSseRoute(app: FastifyInstance, services: StreamServices): Promise<void> {
  const { authentication, registry, limits, schema } = services;
  const handler = createHandler<FastifyRequest, StreamContext, StreamContext>({
    schema,
    onSubscribe: (request, params) => {
      const prepared = prepareSubscription(schema, services.config.limits, params);
      if (!prepared.ok) {
        const body = JSON.stringify({ data: null, errors: prepared.errors.map((error) => error.toJSON()) });
        return [body, { status: 400, statusText: 'Bad Request', headers: { 'content-type': 'application/json; charset=utf-8' } }];
      }
      return { schema, document: prepared.document, operationName: prepared.operationName, variableValues: prepared.variables, contextValue: request.context };
    },
  });

  await app.register(async (scope) => {
    scope.addHook('preHandler', authentication.authenticate);
    scope.post(SSE_PATH, { config: { longLived: true } satisfies LongLivedRoute }, async (request, reply) => {
      const caller = authentication.identityOf(request)?.caller;
      const key = authentication.keyOf(request);
      if (!caller || !key) return reply.code(500).send({ detail: 'Internal error' });
      if (!String(request.headers.accept ?? '').includes('text/event-stream')) {
        return reply.code(406).send({ detail: 'The stream is sent as text/event-stream: send Accept: text/event-stream' });
      }
      // Taken before the stream starts: past it, a refusal could only be a TOO_MANY_STREAMS message after a 200.
      const place = await registry.reserve(key.apiKeyId);
      if (!place) {
        return reply.code(429).header('Retry-After', '1').send({ detail: `At most ${limits.perKey} open streams per API key: close one first` });
      }
      try {
        const response = reply.raw;
        const lastEventId = request.headers['last-event-id'];
        let stream: EventStream | undefined;
        let shuttingDown = false;
        const context: StreamContext = {
          openStream: async (args) =>
            (stream = await services.openStream(caller, key, args, {
              place,
              resumeFrom: typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : undefined,
              hasRoom: (opened) => opened.unwritten < MAX_UNWRITTEN && !response.writableNeedDrain,
              onEnd: (reason) => {
                // A stopping gateway ends the response without `complete`, so that the client reconnects (elsewhere).
                if (reason === 'shutdown') {
                  shuttingDown = true;
                  response.end();
                }
              },
            })),
        };
        const [body, init] = await handler({
          method: 'POST',
          url: request.url,
          headers: {
            get: (name) => (name === 'accept' ? 'text/event-stream' : (headerOf(request, name) ?? null)),
          },
          body: request.body as Record<string, unknown>,
          raw: request,
          context,
        });
        if (body === null || typeof body === 'string') {
          return reply.code(init.status).headers(init.headers ?? {}).send(body ?? undefined);
        }

        // Answered meanwhile (the stream took its place in the registry): nothing will read it, so it ends now.
        if (reply.sent || response.headersSent) {
          stream?.end('client-gone');
          void body.return(undefined);
          return reply;
        }
        reply.hijack();
        // The reply's own headers (RateLimit and RateLimit-Policy, set by the key check) go out with the stream's.
        const replyHeaders = Object.entries(reply.getHeaders()).filter((header): header is [string, string | number | string[]] => header[1] !== undefined);
        response.writeHead(200, { ...Object.fromEntries(replyHeaders), ...init.headers, [REQUEST_ID_HEADER]: String(request.id), 'x-accel-buffering': 'no' });
        let lastWrite = Date.now();
        const write = (chunk: string) => {
          if (response.writableEnded) return;
          response.write(chunk);
          lastWrite = Date.now();
        };
        // At least every heartbeatMs of silence, a comment line: a quiet stream is told from a dead one.
        const heartbeat = setInterval(() => {
          if (Date.now() - lastWrite >= limits.heartbeatMs / 2) write(':\n\n');
        }, limits.heartbeatMs / 2);
        const leave = () => {
          stream?.end('client-gone');
          void body.return(undefined);
        };
        request.raw.once('close', leave);
        response.once('close', leave);
        // A client gone while the stream was opening (its place taken in Redis) was never seen leaving.
        if (response.destroyed) leave();
        const drained = () => stream?.roomMaybe();
        response.on('drain', drained);
        try {
          for await (const chunk of body) {
            if (chunk.startsWith('event: next')) {
              const cursor = stream?.written() ?? null;
              write(cursor === null ? chunk : `id: ${cursor}\n${chunk}`);
            } else if (chunk.startsWith('event: complete') && shuttingDown) {
              break;
            } else {
              write(chunk);
            }
          }
        } finally {
          clearInterval(heartbeat);
          request.raw.off('close', leave);
          response.off('close', leave);
          response.off('drain', drained);
          if (!response.writableEnded) response.end();
        }
        return reply;
      } finally {
        // A place whose stream never opened (a refused request, a client gone first); an open stream's goes with it.
        registry.release(place);
      }
    });
  });
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(', ') : value;
}
