import type { FastifyInstance, FastifyRequest } from 'fastify';
import { graphqlBody } from './graphql-body.ts';
import { rootFieldErrorsBody } from './unauthenticated.ts';

/**
 * A route's config for an answer that lasts as long as its client keeps it (a stream): no gateway
 * timeout, since its opening is bounded by those of the look-ups it makes; its body still has the body timeout.
 */
export interface LongLivedRoute {
  longLived?: boolean;
}

/**
 * A request still unanswered the gateway timeout after its body arrived gets a 504 whose errors name
 * its root fields (contract section 2), or carry no path when the document names none. The time its
 * body takes to arrive is the body timeout's (contract section 8: "its whole body within 30 s"), which
 * the server enforces by closing the connection; counted from the request's arrival, the gateway's 10 s
 * answered a body that took 13 s with a 504. Long-lived routes (the SSE stream) are left out.
 */
const timedOutRequests = new WeakSet<FastifyRequest>();

/**
 * Whether the request was answered 504, from the moment the 504 is sent: `reply.sent` turns true only
 * once the 504 is written, after the onSend hooks, and the handler may finish in between.
 */
export function gatewayTimedOut(request: FastifyRequest): boolean {
  return timedOutRequests.has(request);
}

export function addGatewayTimeout(app: FastifyInstance, timeoutMs: number): void {
  app.addHook('preValidation', async (request, reply) => {
    if ((request.routeOptions.config as LongLivedRoute).longLived) return;
    const timer = setTimeout(() => {
      if (!reply.sent) {
        timedOutRequests.add(request);
        void reply.code(504).send(rootFieldErrorsBody(graphqlBody(request), 'The request timed out', 'GATEWAY_TIMEOUT'));
      }
    }, timeoutMs);
    reply.raw.once('close', () => clearTimeout(timer));
  });
}
