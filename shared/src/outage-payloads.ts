import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { defaultFieldResolver, getNamedType, isNonNullType, isObjectType, type GraphQLSchema } from 'graphql';
import { isDependencyOutage, mayHaveCommitted, payloadError, TEMPORARILY_UNAVAILABLE_MESSAGE } from './errors.ts';
import type { Logger } from './logger.ts';

/**
 * The extension of a subgraph's answer whose outage payload may hide a committed write (`mayHaveCommitted`):
 * the gateway then keeps that answer for an Idempotency-Key instead of letting a retry run the
 * mutation again. The gateway does not pass a subgraph's extensions on to clients.
 */
export const OUTCOME_UNKNOWN_EXTENSION = 'outcomeUnknown';

/** The requests (by context) whose outage payload may hide a committed write. */
const outcomeUnknown = new WeakSet<object>();

/** Marks such an answer with OUTCOME_UNKNOWN_EXTENSION. One listener for every request: it keeps no state of its own. */
export function outcomeUnknownPlugin(): ApolloServerPlugin {
  const listener: GraphQLRequestListener<object> = {
    willSendResponse: async ({ contextValue, response }) => {
      if (!outcomeUnknown.has(contextValue) || response.body.kind !== 'single') return;
      response.body.singleResult.extensions = { ...response.body.singleResult.extensions, [OUTCOME_UNKNOWN_EXTENSION]: true };
    },
  };
  return { requestDidStart: async () => listener };
}

/**
 * Contract section 7: a database or other dependency that does not answer during a mutation is its
 * payload's TEMPORARILY_UNAVAILABLE error (a retry with the same idempotency id is safe), wherever the
 * payload can carry that error alone (its other fields nullable); elsewhere it stays the top-level
 * TEMPORARILY_UNAVAILABLE error that maskErrors makes of it.
 */
export function answerOutagesInPayloads(schema: GraphQLSchema): GraphQLSchema {
  for (const field of Object.values(schema.getMutationType()?.getFields() ?? {})) {
    const payload = getNamedType(field.type);
    if (!isObjectType(payload)) continue;
    const fields = Object.values(payload.getFields());
    if (!fields.some((f) => f.name === 'error') || fields.some((f) => f.name !== 'error' && isNonNullType(f.type))) continue;
    const resolve = field.resolve ?? defaultFieldResolver;
    field.resolve = async (source, args, context: { log?: Logger }, info) => {
      try {
        return await resolve(source, args, context, info);
      } catch (error) {
        if (!isDependencyOutage(error)) throw error;
        context.log?.warn({ err: error, path: [info.fieldName] }, 'a dependency did not answer');
        if (mayHaveCommitted(error)) outcomeUnknown.add(context);
        return { error: payloadError('TEMPORARILY_UNAVAILABLE', TEMPORARILY_UNAVAILABLE_MESSAGE) };
      }
    };
  }
  return schema;
}
