import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { composeServices } from '@apollo/composition';
import { DEFAULT_PORTS, SERVICE_NAMES } from '@ots/shared/config';
import { rootFieldScopes } from './scopes.ts';
import { buildSchema, findBreakingChanges, lexicographicSortSchema, parse, printSchema, type GraphQLSchema } from 'graphql';
import { renderDocs } from './reference/render.ts';
import { DOCS_DIR, DOCS_FILES } from './reference/route.ts';

/**
 * Build step: composes the subgraphs' SDL files into the supergraph the gateway loads. A
 * composition error fails the build (and so CI); nothing is introspected at start-up.
 */
export const SUPERGRAPH_FILE = new URL('../supergraph.graphql', import.meta.url);
/**
 * The published API (what clients see), committed. The schema evolves additively (contract
 * section 9): a composition that would break a published type fails the build; an additive one
 * rewrites this file, to be committed with the change.
 */
export const PUBLISHED_API_FILE = new URL('../published-api.graphql', import.meta.url);

/** Each subgraph's SDL as committed. */
export function subgraphSdl(name: (typeof SERVICE_NAMES)[number]): string {
  return readFileSync(new URL(`../../services/${name}/schema.graphql`, import.meta.url), 'utf8');
}

/** Composes the subgraphs' SDL (as committed, unless `sdlOf` gives other text: the build checks' tests). */
export function composeSupergraph(sdlOf = subgraphSdl): { supergraphSdl: string; apiSchema: GraphQLSchema } {
  const result = composeServices(
    SERVICE_NAMES.map((name) => ({
      name,
      // Routing URLs are the defaults; the gateway overrides them from configuration at start-up.
      url: `http://127.0.0.1:${DEFAULT_PORTS[name]}/graphql`,
      typeDefs: parse(sdlOf(name)),
    })),
  );
  if (result.errors) {
    throw new Error(`supergraph composition failed:\n${result.errors.map((error) => `- ${error.message}`).join('\n')}`);
  }
  // Contract section 5: a new operation cannot ship unprotected; `viewer` declares `@requiresScopes(scopes: [[]])`.
  const { undeclared } = rootFieldScopes(result.supergraphSdl);
  if (undeclared.length > 0) {
    throw new Error(
      `every root field must declare its scope with @requiresScopes (contract section 5); these declare none:\n${undeclared.map((field) => `- ${field}`).join('\n')}`,
    );
  }
  return { supergraphSdl: result.supergraphSdl, apiSchema: lexicographicSortSchema(result.schema.toAPISchema().toGraphQLJSSchema()) };
}

/** Changes that would break a client of the published API: removed or retyped fields, arguments, values. */
export function breakingChanges(published: string, current: GraphQLSchema): string[] {
  return findBreakingChanges(buildSchema(published), current).map((change) => `${change.type}: ${change.description}`);
}

/** Composes, refuses a breaking change of the published API, and writes both files and the `/docs` pages. */
export function composeAndWrite(): void {
  const { supergraphSdl, apiSchema } = composeSupergraph();
  if (existsSync(PUBLISHED_API_FILE)) {
    const breaking = breakingChanges(readFileSync(PUBLISHED_API_FILE, 'utf8'), apiSchema);
    if (breaking.length > 0) {
      throw new Error(
        `the composed API breaks the published one (mark a field @deprecated first, remove it in a later release):\n${breaking.map((line) => `- ${line}`).join('\n')}`,
      );
    }
  }
  writeIfChanged(SUPERGRAPH_FILE, supergraphSdl);
  const publishedSdl = `${printSchema(apiSchema)}\n`;
  writeIfChanged(PUBLISHED_API_FILE, publishedSdl);
  const pages = renderDocs(publishedSdl, supergraphSdl);
  mkdirSync(DOCS_DIR, { recursive: true });
  for (const file of DOCS_FILES) writeIfChanged(new URL(file, DOCS_DIR), pages[file]);
}

/** Replaces the file in one step, so a process starting meanwhile never reads half of it. */
function writeIfChanged(file: URL, content: string): void {
  if (existsSync(file) && readFileSync(file, 'utf8') === content) return;
  const temporary = new URL(`${file.href}.${process.pid}.tmp`);
  writeFileSync(temporary, content);
  renameSync(temporary, file);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    composeAndWrite();
    console.log(`composed ${SERVICE_NAMES.length} subgraphs into gateway/supergraph.graphql`);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
