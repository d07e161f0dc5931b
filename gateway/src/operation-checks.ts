import type { ApolloServerPlugin } from '@apollo/server';
import { badRequest, unresolvedOperation } from './root-fields.ts';

const SUBSCRIPTIONS_ELSEWHERE =
  'Subscriptions are not served on POST /graphql: subscribe on /graphql/stream (Server-Sent Events) or /graphql/ws (graphql-transport-ws)';

/**
 * Mistakes in the request itself that the gateway's executor would otherwise fail on as an internal
 * error (contract section 7): an operation name the document does not define, several operations and
 * no name, a subscription. Each is a 400 naming it, before any subgraph is called.
 */
export function operationChecksPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, request }) {
          if (!operation) throw unresolvedOperation(request.operationName);
          if (operation.operation === 'subscription') throw badRequest(SUBSCRIPTIONS_ELSEWHERE);
        },
      };
    },
  };
}
