import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { SSE_PATH } from './sse.ts';
import { WS_PATH } from './ws.ts';

/**
 * POST /graphql serves queries and mutations; a subscription sent there is the client's mistake
 * (contract sections 4 and 7): a 400 naming where subscriptions are served, before anything runs.
 */
export function refuseSubscriptionsPlugin(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation }) {
          if (operation?.operation !== 'subscription') return;
          throw new GraphQLError(`Subscriptions are served at POST ${SSE_PATH} (GraphQL over SSE) and ${WS_PATH} (GraphQL over WebSocket), not at POST /graphql`, {
            extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
          });
        },
      };
    },
  };
}
