import { existsSync, readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { DocsPages } from './render.ts';

/** Where `npm run compose` writes the pages (gitignored, like the supergraph). */
export const DOCS_DIR = new URL('../../api-docs/', import.meta.url);
export const DOCS_FILES: readonly (keyof DocsPages)[] = ['index.html', 'reference.html', 'errors.html'];

// The pages carry their own style and nothing else: no script, nothing loaded from anywhere.
const SECURITY_HEADERS = { 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'", 'x-content-type-options': 'nosniff' };

/** GET /docs: the guide, the API reference and the error codes, built at compose time; no key needed. */
export function registerDocs(app: FastifyInstance): void {
  const pages = new Map<string, string>();
  for (const file of DOCS_FILES) {
    const path = new URL(file, DOCS_DIR);
    if (!existsSync(path)) throw new Error(`gateway/api-docs/${file} is missing: run npm run compose`);
    pages.set(file, readFileSync(path, 'utf8'));
  }
  app.get('/docs', async (_request, reply) => reply.redirect('/docs/'));
  app.get('/docs/', async (_request, reply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(pages.get('index.html')));
  app.get<{ Params: { page: string } }>('/docs/:page', async (request, reply) => {
    const page = pages.get(request.params.page);
    if (page === undefined) return reply.code(404).send({ detail: 'No such page' });
    return reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(page);
  });
}
