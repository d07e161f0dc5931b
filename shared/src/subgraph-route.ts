import type { z } from 'zod';
import type { ScopeRequirement } from './scopes.ts';

/**
 * A route one subgraph serves to another beside /graphql: its path and the shapes of what it takes
 * and answers. Both ends import the same contract: the server (`CallerRoute` in subgraph-server.ts)
 * and the caller (`callSubgraphRoute` in subgraph-client.ts).
 */
export interface SubgraphRouteContract {
  path: string;
  input: z.ZodType;
  answer: z.ZodType;
  /**
   * The scopes the caller's key needs, as `@requiresScopes` states them for a root field: the server
   * checks them from the assertion (contract section 5), as it does for its GraphQL root fields.
   */
  requiredScopes: ScopeRequirement;
}
