import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@ots/shared/config';
import { createLogger } from '@ots/shared/logger';
import { createHttpApp } from '@ots/shared/subgraph-server';
import { CONSOLE_PAGES, contentSecurityPolicy, registerConsole } from '../../src/console/http.ts';
import { openKeyStore, type OpenedKeyStore } from '../../src/key-store.ts';

/**
 * The console's pages and assets as the gateway serves them, from a build folder made here (the
 * real build belongs to the front end). Pages never touch the database, so none is needed.
 */
const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
const logger = createLogger('console-pages', 'silent');
const INDEX =
  '<!doctype html><html><head><meta property="csp-nonce" nonce="OTS_CSP_NONCE"><script type="module" src="/assets/app-1a2b3c.js" nonce="OTS_CSP_NONCE"></script></head><body><div id="root"></div></body></html>';
let dist: string;
let keys: OpenedKeyStore;

async function serve(distDir: string) {
  const app = createHttpApp(config, logger, { adoptRequestId: false });
  await registerConsole(app, { config, keyStore: keys.keyStore, distDir });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return { app, base: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}` };
}

function expectSecurityHeaders(response: Response, styleNonce?: string) {
  expect(response.headers.get('content-security-policy')).toBe(contentSecurityPolicy(styleNonce));
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('referrer-policy')).toBe('no-referrer');
}

/** The style nonce of a page's policy; each page has its own. */
function pageNonce(response: Response): string {
  const nonce = /'nonce-([A-Za-z0-9+/]{22}==)'/.exec(response.headers.get('content-security-policy') ?? '')?.[1];
  if (!nonce) throw new Error(`no style nonce in ${response.url}'s policy`);
  return nonce;
}

beforeAll(() => {
  keys = openKeyStore(config, logger, { listen: false });
  dist = mkdtempSync(join(tmpdir(), 'console-dist-'));
  mkdirSync(join(dist, 'built', 'assets'), { recursive: true });
  writeFileSync(join(dist, 'built', 'index.html'), INDEX);
  writeFileSync(join(dist, 'built', 'assets', 'app-1a2b3c.js'), 'console.log("console")\n');
  writeFileSync(join(dist, 'built', 'assets', 'app-1a2b3c.css'), 'body { margin: 0 }\n');
  writeFileSync(join(dist, 'secret.txt'), 'outside the build\n');
});

afterAll(async () => {
  await keys?.close();
  rmSync(dist, { recursive: true, force: true });
});

describe('a built console', () => {
  it('answers every client-side route with index.html, and /assets/* with the files, all with the security headers', async () => {
    const { app, base } = await serve(join(dist, 'built'));
    try {
      const nonces = new Set<string>();
      for (const page of CONSOLE_PAGES) {
        const response = await fetch(`${base}${page}`);
        expect(response.status, page).toBe(200);
        expect(response.headers.get('content-type')).toMatch(/^text\/html/);
        // Each page its own style nonce, in its policy and in place of the build's placeholders.
        const nonce = pageNonce(response);
        nonces.add(nonce);
        expect(await response.text()).toBe(INDEX.replaceAll('OTS_CSP_NONCE', nonce));
        expectSecurityHeaders(response, nonce);
      }
      expect(nonces.size).toBe(CONSOLE_PAGES.length);
      const script = await fetch(`${base}/assets/app-1a2b3c.js`);
      expect(script.status).toBe(200);
      expect(script.headers.get('content-type')).toMatch(/javascript/);
      expect(await script.text()).toBe('console.log("console")\n');
      expectSecurityHeaders(script);
      const style = await fetch(`${base}/assets/app-1a2b3c.css`);
      expect(style.headers.get('content-type')).toMatch(/^text\/css/);
    } finally {
      await app.close();
    }
  });

  it('serves nothing else: unknown routes, missing assets and paths out of the build are 404', async () => {
    const { app, base } = await serve(join(dist, 'built'));
    try {
      for (const path of ['/index.html', '/settings/unknown', '/assets/missing.js', '/assets/../../secret.txt', '/assets/%2e%2e/%2e%2e/secret.txt', '/assets/', '/console/api']) {
        const response = await fetch(`${base}${path}`);
        // The assets folder itself is refused (403) rather than listed.
        expect(response.status, path).toBe(path === '/assets/' ? 403 : 404);
        expect(await response.text()).not.toContain('outside the build');
      }
    } finally {
      await app.close();
    }
  });
});

describe('an address nobody serves', () => {
  it("a browser gets the console's page (its router shows \"Page not found\") with 404; a program gets JSON", async () => {
    const { app, base } = await serve(join(dist, 'built'));
    try {
      const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
      for (const path of ['/settings/unknown', '/no/such/page', '/console', '/assets/missing.html']) {
        const page = await fetch(`${base}${path}`, { headers: { accept: browserAccept } });
        expect(page.status, path).toBe(404);
        expect(page.headers.get('content-type'), path).toMatch(/^text\/html/);
        expect(await page.text(), path).toBe(INDEX.replaceAll('OTS_CSP_NONCE', pageNonce(page)));
        expectSecurityHeaders(page, pageNonce(page));
        const program = await fetch(`${base}${path}`, { headers: { accept: 'application/json' } });
        expect(program.status, path).toBe(404);
        expect(await program.json(), path).toEqual({ detail: 'Not found' });
      }
      // A form posted to an unknown address is not answered with a page.
      const posted = await fetch(`${base}/no/such/page`, { method: 'POST', headers: { accept: browserAccept, origin: base } });
      expect(posted.status).toBe(404);
      expect(await posted.json()).toEqual({ detail: 'Not found' });
    } finally {
      await app.close();
    }
  });
});

describe('a console not built yet', () => {
  it('answers its pages with a plain 503 page that says so, with the same headers', async () => {
    const { app, base } = await serve(join(dist, 'not-built'));
    try {
      for (const page of ['/', '/sign-in']) {
        const response = await fetch(`${base}${page}`);
        expect(response.status).toBe(503);
        expect(response.headers.get('content-type')).toMatch(/^text\/html/);
        expect(await response.text()).toMatch(/console is not built/);
        expectSecurityHeaders(response);
      }
    } finally {
      await app.close();
    }
  });
});
