import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';
import { CONSOLE_DIR, SOURCE_HASH_FILE, consoleSourceHash } from './source-hash.ts';

/** Records what the build was made from, for `npm start`'s staleness check (ensure-built.ts). */
function sourceHashStamp(): Plugin {
  return {
    name: 'ots-source-hash',
    apply: 'build',
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: SOURCE_HASH_FILE, source: `${consoleSourceHash()}\n` });
    },
  };
}

/**
 * GraphiQL's stylesheet embeds its web fonts as data: URIs, which the console's policy (font-src
 * 'self') refuses, and the console writes in system fonts anyway (src/pages/explorer.css): the
 * @font-face rules go, and with them a third of the stylesheet.
 */
function withoutGraphiqlWebFonts(): Plugin {
  return {
    name: 'ots-without-graphiql-web-fonts',
    enforce: 'pre',
    transform(code, id) {
      if (!/[\\/]graphiql[\\/]dist[\\/]style\.css$/.test(id)) return undefined;
      return { code: code.replace(/@font-face\s*{[^}]*}/g, ''), map: null };
    },
  };
}

// `npm run dev -w @ots/console` proxies to a running `npm start` (GATEWAY_URL, default port 4000).
const gateway = process.env.GATEWAY_URL ?? 'http://127.0.0.1:4000';

export default defineConfig({
  root: CONSOLE_DIR,
  plugins: [react(), withoutGraphiqlWebFonts(), sourceHashStamp()],
  // Each `nonce` of the built index.html, the `csp-nonce` meta tag's read by main.tsx, is replaced by
  // the nonce the gateway makes for each page it serves (services/accounts/src/console/http.ts).
  html: { cspNonce: 'OTS_CSP_NONCE' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Nothing becomes a data: URI, so the gateway's Content-Security-Policy can stay at 'self'.
    assetsInlineLimit: 0,
    // GraphiQL (CodeMirror, the doc explorer) is most of the bundle; it loads only on /explorer.
    chunkSizeWarningLimit: 1500,
    rolldownOptions: {
      // On a busy machine Rolldown warns that plugins took a share of the build; that is no defect here.
      checks: { bundlerTimings: false },
      onwarn(warning, warn) {
        // GraphiQL's React-compiler runtime says "use no memo"; dropping the directive changes nothing.
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE' && warning.message.includes('react-compiler-runtime')) return;
        warn(warning);
      },
    },
  },
  server: {
    proxy: Object.fromEntries(
      ['/console/api', '/graphql'].map((path) => [path, { target: gateway, headers: { origin: gateway } }]),
    ),
  },
});
