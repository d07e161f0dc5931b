import { readFileSync } from 'node:fs';
import { buildSchema, getOperationAST, GraphQLError, Kind, parse, specifiedRules, validate, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { Limits } from '@ots/shared/config';
import { badUserInput } from '@ots/shared/errors';
import { eventTypesOf, MAX_FEED_CURSOR_LENGTH } from '@ots/shared/event-feed';
import { parseDateTime } from '@ots/shared/scalars';
import { queryLimitRules } from '../limits.ts';
import { fragmentsOf } from '../root-fields.ts';
import type { EventStream, StreamMessage } from './event-stream.ts';

/**
 * @apollo/gateway executes no subscriptions, so the gateway serves the one the API has itself: the
 * published schema (what clients see, composed from the subgraphs), with `Subscription.events`
 * wired to a stream of the events subgraph's feed. Queries and mutations stay on POST /graphql.
 */

const PUBLISHED_API = new URL('../../published-api.graphql', import.meta.url);

export interface EventsArgs {
  after?: string | null;
  filter?: { types?: string[] | null; occurredAfter?: string | null } | null;
}

/** A stream's start and filter as the feed route takes them, refused as `listEvents` refuses them. */
export interface FeedArguments {
  after: string | null;
  filter: { types: string[] | null; occurredAfter: string | null };
}

/**
 * The stream's schema is built from the published SDL, whose scalars check nothing: its arguments are
 * checked here, with `listEvents`' own rules and messages, so that a mistake ends the stream with
 * BAD_USER_INPUT rather than reaching the feed route, whose bounds would refuse it as an outage.
 * `resumeFrom` (SSE's Last-Event-ID) wins over `after`.
 */
export function feedArgumentsOf(args: EventsArgs, resumeFrom: string | undefined): FeedArguments {
  const after = resumeFrom ?? args.after ?? null;
  // No cursor the feed issues is this long.
  if (after !== null && after.length > MAX_FEED_CURSOR_LENGTH) throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
  const types = eventTypesOf(args.filter?.types);
  const occurredAfter = args.filter?.occurredAfter;
  return {
    after,
    filter: {
      // Known types only, each once: never more than the route takes.
      types: types ? [...new Set(types)] : null,
      occurredAfter: occurredAfter === null || occurredAfter === undefined ? null : parseDateTime(occurredAfter).toISOString(),
    },
  };
}

/** What the transport hands execution: how to open the stream for the operation's arguments. */
export type StreamContext = {
  openStream(args: EventsArgs): Promise<EventStream>;
};

export function streamSchema(): GraphQLSchema {
  const schema = buildSchema(readFileSync(PUBLISHED_API, 'utf8'));
  const events = schema.getSubscriptionType()?.getFields().events;
  if (!events) throw new Error('the published API has no Subscription.events: run npm run compose');
  events.subscribe = async (_root: unknown, args: EventsArgs, context: StreamContext) => (await context.openStream(args)).messages();
  events.resolve = (message: StreamMessage) => {
    if ('end' in message) throw message.end;
    return message;
  };
  return schema;
}

export interface StreamRequest {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

export type PreparedSubscription =
  | { ok: true; document: DocumentNode; operationName: string | undefined; variables: Record<string, unknown> | undefined }
  | { ok: false; errors: GraphQLError[] };

const badRequest = (message: string) => ({ ok: false as const, errors: [new GraphQLError(message, { extensions: { code: 'BAD_REQUEST' } })] });

/** Whether a selection at the root of the operation (a field, or a fragment that holds it) carries a directive. */
function conditionalRoot(selectionSet: SelectionSetNode, fragments: ReturnType<typeof fragmentsOf>, expanded = new Set<string>()): boolean {
  return selectionSet.selections.some((selection) => {
    if ((selection.directives?.length ?? 0) > 0) return true;
    if (selection.kind === Kind.INLINE_FRAGMENT) return conditionalRoot(selection.selectionSet, fragments, expanded);
    if (selection.kind !== Kind.FRAGMENT_SPREAD || expanded.has(selection.name.value)) return false;
    expanded.add(selection.name.value);
    const fragment = fragments.get(selection.name.value);
    return fragment !== undefined && conditionalRoot(fragment.selectionSet, fragments, expanded);
  });
}

/** Parses and validates under the same limits as POST /graphql; only a subscription is served here. */
export function prepareSubscription(schema: GraphQLSchema, limits: Limits, request: StreamRequest): PreparedSubscription {
  if (typeof request.query !== 'string' || request.query.trim() === '') return badRequest('The body must be a JSON object with a string member "query"');
  if (request.operationName !== undefined && request.operationName !== null && typeof request.operationName !== 'string') {
    return badRequest('operationName must be a string');
  }
  if (request.variables !== undefined && request.variables !== null && (typeof request.variables !== 'object' || Array.isArray(request.variables))) {
    return badRequest('variables must be a JSON object');
  }
  let document: DocumentNode;
  try {
    document = parse(request.query, { maxTokens: limits.tokens });
  } catch (error) {
    return { ok: false, errors: [error instanceof GraphQLError ? error : new GraphQLError('The document could not be parsed')] };
  }
  // Before validation: graphql 16's single-root-field rule throws on `@include(if: $variable)` at a
  // subscription's root, and a root field skipped at execution leaves its subscribe nothing to
  // subscribe to, so it throws (not a GraphQLError).
  const fragments = fragmentsOf(document);
  const subscriptions = document.definitions.filter(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION && definition.operation === 'subscription',
  );
  if (subscriptions.some((subscription) => conditionalRoot(subscription.selectionSet, fragments))) {
    return badRequest("A subscription's root field is always selected: @skip and @include may not be used on it (GraphQL's single root field rule)");
  }
  const errors = validate(schema, document, [...specifiedRules, ...queryLimitRules(limits)]);
  if (errors.length > 0) {
    // The code POST /graphql gives the same mistakes; a limit rule's own code is kept.
    return { ok: false, errors: errors.map((error) => (error.extensions.code ? error : new GraphQLError(error.message, { nodes: error.nodes, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }))) };
  }
  const operationName = typeof request.operationName === 'string' ? request.operationName : undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation) {
    return badRequest(operationName ? `The document defines no operation named ${operationName}` : 'The document holds several operations: name one in operationName');
  }
  if (operation.operation !== 'subscription') {
    return badRequest('Only subscriptions are served on the streams: send queries and mutations to POST /graphql');
  }
  return { ok: true, document, operationName, variables: (request.variables ?? undefined) as Record<string, unknown> | undefined };
}
