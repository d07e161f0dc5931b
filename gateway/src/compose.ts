import { readFileSync, writeFileSync } from 'node:fs';
import { composeServices } from '@apollo/composition';
import { DEFAULT_PORTS, SERVICE_NAMES } from '@ots/shared/config';
import { parse } from 'graphql';

/**
 * Build step: composes the subgraphs' SDL files into the supergraph the gateway loads. A
 * composition error fails the build (and so CI); nothing is introspected at start-up.
 */
export const SUPERGRAPH_FILE = new URL('../supergraph.graphql', import.meta.url);

export function composeSupergraph(): string {
  const result = composeServices(
    SERVICE_NAMES.map((name) => ({
      name,
      // Routing URLs are the defaults; the gateway overrides them from configuration at start-up.
      url: `http://127.0.0.1:${DEFAULT_PORTS[name]}/graphql`,
      typeDefs: parse(readFileSync(new URL(`../../services/${name}/schema.graphql`, import.meta.url), 'utf8')),
    })),
  );
  if (result.errors) {
    throw new Error(`supergraph composition failed:\n${result.errors.map((error) => `- ${error.message}`).join('\n')}`);
  }
  return result.supergraphSdl;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    writeFileSync(SUPERGRAPH_FILE, composeSupergraph());
    console.log(`composed ${SERVICE_NAMES.length} subgraphs into gateway/supergraph.graphql`);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}
