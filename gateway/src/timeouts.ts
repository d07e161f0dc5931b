import type { FastifyInstance } from 'fastify';
import { graphqlBody, operationNameOf } from './graphql-body.ts';
import { rootResponseKeysOf } from './unauthenticated.ts';

/**
 * A request still unanswered after the gateway timeout gets a 504 whose errors name its root fields
 * (contract section 2), or carry no path when the document names none. One whose body has not
 * arrived by then is closed after it (a body trickled a byte at a time must not hold its connection).
 */
export function addGatewayTimeout(app: FastifyInstance, timeoutMs: number): void {
  app.addHook('onRequest', async (request, reply) => {
    const timer = setTimeout(() => {
      if (!reply.sent) {
        const body = graphqlBody(request);
        const keys = typeof body?.query === 'string' ? rootResponseKeysOf(body.query, operationNameOf(body)) : [];
        if (!request.raw.complete) void reply.header('connection', 'close');
        void reply.code(504).send({
          data: null,
          errors: (keys.length > 0 ? keys : [undefined]).map((key) => ({
            message: 'The request timed out',
            ...(key ? { path: [key] } : {}),
            extensions: { code: 'GATEWAY_TIMEOUT' },
          })),
        });
      }
    }, timeoutMs);
    reply.raw.once('close', () => clearTimeout(timer));
  });
}
