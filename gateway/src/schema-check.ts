import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { composeServices } from '@apollo/composition';
import { Supergraph } from '@apollo/federation-internals';
import { DEFAULT_PORTS, SERVICE_NAMES, type ServiceName } from '@ots/shared/config';
import { buildSchema, findDangerousChanges, lexicographicSortSchema, parse } from 'graphql';
import { breakingChanges, PUBLISHED_API_FILE } from './compose.ts';

/**
 * The check a subgraph's team runs before deploying that subgraph alone: its SDL composed with the
 * SDL the other subgraphs have published, and the composed API compared with the published one
 * (contract section 9: additive only). The others' SDL comes from a supergraph (the one the
 * gateway runs, `gateway/supergraph.graphql` of its image) or else from their schema.graphql here.
 */
export interface SchemaCheckResult {
  /** Why the subgraphs do not compose: the gateway could not load them. */
  compositionErrors: string[];
  /** Changes that break a client of the published API. */
  breaking: string[];
  /** Changes that may surprise a client (an enum value or an optional argument added), allowed. */
  dangerous: string[];
}

export function checkSubgraph(options: { service: ServiceName; sdl: string; others: Map<string, string>; publishedApi: string }): SchemaCheckResult {
  const subgraphs = new Map(options.others);
  subgraphs.set(options.service, options.sdl);
  let composed;
  try {
    composed = composeServices(
      [...subgraphs].map(([name, sdl]) => ({
        name,
        url: `http://127.0.0.1:${DEFAULT_PORTS[name as ServiceName] ?? 0}/graphql`,
        typeDefs: parse(sdl),
      })),
    );
  } catch (error) {
    // An SDL that does not parse.
    return { compositionErrors: [`${options.service}: ${(error as Error).message}`], breaking: [], dangerous: [] };
  }
  if (composed.errors) return { compositionErrors: composed.errors.map((error) => error.message), breaking: [], dangerous: [] };
  const api = lexicographicSortSchema(composed.schema.toAPISchema().toGraphQLJSSchema());
  return {
    compositionErrors: [],
    breaking: breakingChanges(options.publishedApi, api),
    dangerous: findDangerousChanges(buildSchema(options.publishedApi), api).map((change) => `${change.type}: ${change.description}`),
  };
}

/** Every subgraph's SDL but `service`'s: from a supergraph when one is given, else from the repository. */
export function publishedSubgraphs(service: ServiceName, supergraphSdl: string | undefined): Map<string, string> {
  if (supergraphSdl !== undefined) {
    // Reading the subgraphs out needs no feature support: the security features (requiresScopes) are the gateway's to enforce.
    const extracted = [...Supergraph.build(supergraphSdl, { supportedFeatures: null }).subgraphs()].filter((subgraph) => subgraph.name !== service);
    return new Map(extracted.map((subgraph) => [subgraph.name, subgraph.toString()]));
  }
  return new Map(
    SERVICE_NAMES.filter((name) => name !== service).map((name) => [
      name,
      readFileSync(new URL(`../../services/${name}/schema.graphql`, import.meta.url), 'utf8'),
    ]),
  );
}

const USAGE = `usage: npm run schema:check -- --service <${SERVICE_NAMES.join('|')}> [--schema FILE] [--supergraph FILE] [--published FILE]`;

/** `npm run schema:check`: prints what it found; exit code 1 when the subgraph cannot be deployed, 2 on a usage error. */
function main(): number {
  let values;
  try {
    ({ values } = parseArgs({ options: { service: { type: 'string' }, schema: { type: 'string' }, supergraph: { type: 'string' }, published: { type: 'string' } } }));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const service = values.service as ServiceName | undefined;
  if (!service || !SERVICE_NAMES.includes(service)) {
    console.error(USAGE);
    return 2;
  }
  const result = checkSubgraph({
    service,
    sdl: readFileSync(values.schema ?? new URL(`../../services/${service}/schema.graphql`, import.meta.url), 'utf8'),
    others: publishedSubgraphs(service, values.supergraph === undefined ? undefined : readFileSync(values.supergraph, 'utf8')),
    publishedApi: readFileSync(values.published ?? PUBLISHED_API_FILE, 'utf8'),
  });
  const list = (lines: string[]) => lines.map((line) => `- ${line}`).join('\n');
  if (result.compositionErrors.length > 0) {
    console.error(`${service} does not compose with the other subgraphs:\n${list(result.compositionErrors)}`);
    return 1;
  }
  if (result.breaking.length > 0) {
    console.error(`${service} breaks the published API (mark a field @deprecated first, remove it in a later release):\n${list(result.breaking)}`);
    return 1;
  }
  if (result.dangerous.length > 0) console.log(`changes a client may notice:\n${list(result.dangerous)}`);
  console.log(`${service}: composes with the other subgraphs and breaks nothing of the published API`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main();
