import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import fastifyCookie from '@fastify/cookie';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { databaseUrlOf, databaseVariablesOf, type GatewaySettings } from '@ots/shared/config';
import { createDatabase } from '@ots/shared/db';
import { receiveId } from '@ots/shared/ids';
import { SCHEMA } from '../../migrations/index.ts';
import type { ApiKeyStore } from '../key-store.ts';
import type { OperatorScope } from '../operations.ts';
import type { AccountsDatabase } from '../repository.ts';
import { isSameOriginRequest, SESSION_ABSOLUTE_MS } from './domain.ts';
import * as operations from './operations.ts';
import * as webhooks from './webhooks.ts';
import { ConsoleError, ownerScope, SIGN_IN_REQUIRED, type RequestOrigin, type Session } from './operations.ts';

/**
 * The account console on the gateway's origin: the JSON API under `/console/api/` (the root README,
 * "The console: owners, sessions, and its HTTP API") and the built front end (`console/dist/`).
 * Registered as its own encapsulated plugin, so its cookie parsing, origin check and headers never
 * touch `/graphql`.
 */

const SESSION_COOKIE = 'ots_session';

/** The front end's client-side routes: each is answered with its index.html. */
export const CONSOLE_PAGES = ['/', '/sign-in', '/set-password', '/settings/api-keys', '/settings/security-log', '/settings/webhooks', '/explorer'] as const;

const DEFAULT_DIST_DIR = fileURLToPath(new URL('../../../../console/dist/', import.meta.url));

/**
 * Everything is served from this origin (no CDN, no inline script). Styles may only come from the
 * bundle's own files too, and on a page from a `<style>` element of that page's nonce (GraphiQL's
 * dialogs lock the page's scroll with one); `data:` images cover the few icons that stylesheets embed.
 */
export function contentSecurityPolicy(styleNonce?: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    styleNonce ? `style-src 'self' 'nonce-${styleNonce}'` : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console is not built</h1><p>Build the front end (it lands in <code>console/dist/</code>) and restart the gateway. The API at <code>/graphql</code> works meanwhile.</p></body></html>
`;

export interface ConsoleHttpOptions {
  config: GatewaySettings;
  /** The gateway's key store: key changes invalidate its caches like the CLI's do. */
  keyStore: ApiKeyStore;
  /** The clock of sessions, links and sign-in limits; tests move it. */
  now?: () => number;
  distDir?: string;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The origins a state-changing request may come from: the configured console address and, outside
 * production, this request's own origin when it is addressed to this machine (a development gateway
 * answers on 127.0.0.1 and localhost alike, on whatever port it was given). A DNS-rebound name is
 * not this machine's name, so it stays refused.
 */
function allowedOrigins(config: GatewaySettings, request: FastifyRequest): string[] {
  const origins = [new URL(config.consoleBaseUrl).origin];
  if (!config.production) {
    const host = request.headers.host ?? '';
    const hostname = host.replace(/:\d+$/, '');
    if (LOOPBACK_HOSTS.has(hostname) || hostname === config.host) origins.push(`${request.protocol}://${host}`);
  }
  return origins;
}

function originOf(request: FastifyRequest): RequestOrigin {
  const agent = request.headers['user-agent'];
  return { clientAddress: request.ip, userAgent: typeof agent === 'string' ? agent : null };
}

function bodyOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

export async function registerConsole(app: FastifyInstance, options: ConsoleHttpOptions): Promise<void> {
  const { config } = options;
  const databaseUrl = databaseUrlOf(config, 'accounts');
  if (!databaseUrl) throw new Error(`the console needs ${databaseVariablesOf('accounts')}`);
  // Its own small pool: console traffic never queues behind (or ahead of) the gateway's key look-ups.
  const db = createDatabase<AccountsDatabase>({ url: databaseUrl, schema: SCHEMA, applicationName: 'console', maxConnections: 4 });
  const clock = options.now ?? Date.now;
  // Before sign-in the console acts for no account; each request gets its own logger.
  const scopeOf = (request: FastifyRequest): OperatorScope => ({ acting: 'operator', db, log: request.log, now: () => new Date(clock()), config, keyStore: options.keyStore });
  // Settings → Webhooks calls the events subgraph for the session's account (webhooks.ts).
  const webhooksLink: webhooks.WebhooksLink | undefined = config.assertionPrivateKey
    ? { url: config.subgraphUrls.events, timeoutMs: config.limits.subgraphTimeoutMs, assertionPrivateKey: config.assertionPrivateKey, assertionTtlSeconds: config.assertionTtlSeconds }
    : undefined;
  const distDir = options.distDir ?? DEFAULT_DIST_DIR;
  const cookieOptions = { path: '/', httpOnly: true, sameSite: 'strict' as const, secure: config.production };

  app.addHook('onClose', async () => db.destroy());

  await app.register(async (site) => {
    await site.register(fastifyCookie);

    site.addHook('onRequest', async (request, reply) => {
      if (request.method === 'GET' || request.method === 'HEAD') return;
      const origin = request.headers.origin;
      const fetchSite = request.headers['sec-fetch-site'];
      const sameOrigin = isSameOriginRequest(
        { origin: typeof origin === 'string' ? origin : undefined, secFetchSite: typeof fetchSite === 'string' ? fetchSite : undefined },
        allowedOrigins(config, request),
      );
      if (!sameOrigin) return reply.code(403).send({ detail: 'Cross-origin request refused' });
    });
    site.addHook('onSend', async (_request, reply) => {
      reply.headers(SECURITY_HEADERS);
      // A page has set its own, with its nonce.
      if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', contentSecurityPolicy());
    });

    // As API keys are (gateway/src/authentication.ts): in production a password travels only over HTTPS.
    const overPlainHttp = (request: FastifyRequest) => config.production && !config.tls && request.protocol !== 'https';
    await site.register(async (api) => apiRoutes(api, scopeOf, cookieOptions, webhooksLink, overPlainHttp), { prefix: '/console/api' });

    const sendPage = async (reply: FastifyReply, status: number) => {
      try {
        const page = await readFile(`${distDir}/index.html`, 'utf8');
        // A nonce of its own for each page served, in the page (console/vite.config.ts) and its policy.
        const nonce = randomBytes(16).toString('base64');
        return reply
          .code(status)
          .type('text/html; charset=utf-8')
          .header('content-security-policy', contentSecurityPolicy(nonce))
          .send(page.replace(/\bnonce="[^"]*"/g, `nonce="${nonce}"`));
      } catch {
        return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT_PAGE);
      }
    };
    for (const page of CONSOLE_PAGES) site.get(page, async (_request, reply) => sendPage(reply, 200));
    // An address nobody serves: a person's browser gets the console's own "Page not found" (its router
    // shows it for any unknown path), with 404; a program gets a JSON 404 like the API's.
    site.setNotFoundHandler(async (request, reply) => {
      const wantsPage = (request.method === 'GET' || request.method === 'HEAD') && /\btext\/html\b/.test(request.headers.accept ?? '');
      return wantsPage ? sendPage(reply, 404) : reply.code(404).send({ detail: 'Not found' });
    });
    if (existsSync(`${distDir}/assets`)) {
      await site.register(fastifyStatic, {
        root: `${distDir}/assets`,
        prefix: '/assets/',
        decorateReply: false,
        index: false,
        list: false,
        cacheControl: false,
      });
    }
  });
}

type CookieOptions = { path: string; httpOnly: boolean; sameSite: 'strict'; secure: boolean };

async function apiRoutes(
  api: FastifyInstance,
  scopeOf: (request: FastifyRequest) => OperatorScope,
  cookieOptions: CookieOptions,
  webhooksLink: webhooks.WebhooksLink | undefined,
  overPlainHttp: (request: FastifyRequest) => boolean,
): Promise<void> {
  const sessions = new WeakMap<FastifyRequest, Session>();
  const sessionOf = (request: FastifyRequest) => sessions.get(request)!;
  /** A signed-in route's scope: the owner's account, and the owner from where they are as the actor. */
  const ownerScopeOf = (request: FastifyRequest) => ownerScope(scopeOf(request), sessionOf(request), originOf(request));
  const signedIn = { config: { signedIn: true } };
  const takesPassword = { config: { takesPassword: true } };

  // Refused before the body is read for anything: a password sent in the clear is not checked, so the answer tells nobody whether it was right.
  api.addHook('onRequest', async (request, reply) => {
    if ((request.routeOptions.config as { takesPassword?: boolean }).takesPassword && overPlainHttp(request)) {
      return reply.code(400).send({ detail: 'Passwords are accepted over HTTPS only' });
    }
  });

  const startSession = (reply: FastifyReply, token: string) =>
    reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions, maxAge: SESSION_ABSOLUTE_MS / 1000 });

  api.addHook('preHandler', async (request, reply) => {
    if (!(request.routeOptions.config as { signedIn?: boolean }).signedIn) return;
    const session = await operations.currentSession(scopeOf(request), { token: request.cookies[SESSION_COOKIE] });
    if (!session) return reply.code(401).clearCookie(SESSION_COOKIE, cookieOptions).send({ detail: SIGN_IN_REQUIRED });
    sessions.set(request, session);
  });

  api.setErrorHandler((error, _request, reply) => {
    if (!(error instanceof ConsoleError)) throw error;
    if (error.retryAfterSeconds !== undefined) reply.header('Retry-After', String(error.retryAfterSeconds));
    return reply.code(error.status).send({ detail: error.detail, ...(error.field ? { field: error.field } : {}) });
  });
  api.setNotFoundHandler((_request, reply) => reply.code(404).send({ detail: 'Not found' }));

  api.post('/sign-in', takesPassword, async (request, reply) => {
    const { token, view } = await operations.signIn(scopeOf(request), { body: bodyOf(request), origin: originOf(request), previousToken: request.cookies[SESSION_COOKIE] });
    return startSession(reply, token).send(view);
  });

  api.post('/sign-out', async (request, reply) => {
    await operations.signOut(scopeOf(request), { token: request.cookies[SESSION_COOKIE] });
    return reply.code(204).clearCookie(SESSION_COOKIE, cookieOptions).send();
  });

  api.post('/set-password/check', async (request, reply) => {
    await operations.checkSetPasswordLink(scopeOf(request), { body: bodyOf(request) });
    return reply.code(204).send();
  });

  api.post('/set-password', takesPassword, async (request, reply) => {
    const { token, view } = await operations.setPassword(scopeOf(request), {
      body: bodyOf(request),
      origin: originOf(request),
      previousToken: request.cookies[SESSION_COOKIE],
    });
    return startSession(reply, token).send(view);
  });

  api.get('/session', signedIn, async (request) => {
    const { owner, account } = sessionOf(request);
    return { owner, account };
  });

  api.get('/keys', signedIn, async (request) => operations.listKeys(ownerScopeOf(request)));

  api.post('/keys', signedIn, async (request, reply) => reply.code(201).send(await operations.createKey(ownerScopeOf(request), { body: bodyOf(request) })));

  api.post<{ Params: { id: string } }>('/keys/:id/roll', signedIn, async (request, reply) =>
    reply.code(201).send(await operations.rollKey(ownerScopeOf(request), { keyId: receiveId(request.params.id), body: bodyOf(request) })),
  );

  api.post<{ Params: { id: string } }>('/keys/:id/update', signedIn, async (request) =>
    operations.updateKey(ownerScopeOf(request), { keyId: receiveId(request.params.id), body: bodyOf(request) }),
  );

  api.post<{ Params: { id: string } }>('/keys/:id/revoke', signedIn, async (request) =>
    operations.revokeKey(ownerScopeOf(request), { keyId: receiveId(request.params.id) }),
  );

  api.get<{ Querystring: { after?: string } }>('/security-log', signedIn, async (request) =>
    operations.securityLog(ownerScopeOf(request), { after: typeof request.query.after === 'string' ? request.query.after : undefined }),
  );

  const webhooksScopeOf = (request: FastifyRequest): webhooks.WebhooksScope => {
    if (!webhooksLink) throw new ConsoleError(503, 'Webhooks are unavailable: the gateway has no ASSERTION_PRIVATE_KEY');
    return { ...ownerScopeOf(request), events: webhooksLink };
  };

  api.get('/webhooks', signedIn, async (request) => webhooks.listEndpoints(webhooksScopeOf(request)));

  api.post('/webhooks', signedIn, async (request, reply) => reply.code(201).send(await webhooks.createEndpoint(webhooksScopeOf(request), { body: bodyOf(request) })));

  api.post<{ Params: { id: string; change: string } }>('/webhooks/:id/:change', signedIn, async (request, reply) => {
    const { id, change } = request.params;
    // An id that is not a UUID names no endpoint of the account's: refused here as one of another account's is.
    if (receiveId(id).uuid === undefined) return reply.code(404).send({ detail: 'Not found' });
    if (change === 'rotate-secret') return reply.code(201).send(await webhooks.rotateSecret(webhooksScopeOf(request), { id, body: bodyOf(request) }));
    if (!Object.hasOwn(webhooks.ENDPOINT_CHANGES, change)) return reply.code(404).send({ detail: 'Not found' });
    return webhooks.changeEndpoint(webhooksScopeOf(request), { id, change: change as webhooks.EndpointChange });
  });
}
