import { GraphQLError } from 'graphql';
import { expect } from 'vitest';

/** The GraphQL error `run` refuses with; the test fails when it returns, or throws anything else. */
export function refusal(run: () => unknown): GraphQLError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GraphQLError);
    return error as GraphQLError;
  }
  throw new Error('expected a refusal (a GraphQLError)');
}
