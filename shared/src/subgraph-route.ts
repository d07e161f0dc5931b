import type { z } from 'zod';

/**
 * A route one subgraph serves to another beside /graphql: its path and the shapes of what it takes
 * and answers. Both ends import the same contract: the server (`CallerRoute` in subgraph-server.ts)
 * and the caller (`callSubgraphRoute` in subgraph-client.ts).
 */
export interface SubgraphRouteContract {
  path: string;
  input: z.ZodType;
  answer: z.ZodType;
}
