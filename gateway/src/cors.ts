import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The API's routes; the console's stay same-origin, its POSTs refused from any other origin. */
const API_PATHS = new Set(['/graphql', '/graphql/stream']);
/** What @ots/client and graphql-sse send beyond what CORS lets through unasked. */
const ALLOWED_HEADERS = 'content-type, x-api-key, idempotency-key, last-event-id';
/** What @ots/client reads of an answer, with the rate-limit state; a page sees none of them otherwise. */
const EXPOSED_HEADERS = 'retry-after, idempotent-replayed, x-request-id, ratelimit, ratelimit-policy';
/** How long a browser may keep a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * Lets pages of the `CORS_ORIGINS` origins call the API from a browser (contract section 10: the SDK
 * runs in browsers): each origin exactly, never `*`, and without credentials, since the key travels
 * in a header, not a cookie. Nothing when no origin is configured. A preflight from another origin
 * is answered without the Access-Control-Allow-* headers, which the browser takes as a refusal.
 */
export function allowApiOrigins(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  const allowedOriginOf = (request: FastifyRequest) => {
    const origin = request.headers.origin;
    return typeof origin === 'string' && allowed.has(origin) ? origin : undefined;
  };
  app.addHook('onRequest', async (request, reply) => {
    if (!API_PATHS.has(request.routeOptions.url ?? '')) return;
    // The answer depends on the Origin: a cache must not hand one origin's to another.
    reply.header('vary', 'Origin');
    const origin = allowedOriginOf(request);
    if (origin === undefined) return;
    reply.header('access-control-allow-origin', origin);
    if (request.method !== 'OPTIONS') reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  });
  for (const path of API_PATHS) {
    app.options(path, async (request, reply) => {
      if (allowedOriginOf(request) !== undefined) {
        reply.header('access-control-allow-methods', 'POST');
        reply.header('access-control-allow-headers', ALLOWED_HEADERS);
        reply.header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS));
      }
      return reply.code(204).send();
    });
  }
}
