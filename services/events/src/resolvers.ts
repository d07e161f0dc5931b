import { GraphQLError, GraphQLScalarType } from 'graphql';
import type { Result } from '@ots/shared/errors';
import { parseUuid, receiveId, type ReceivedId, type Uuid } from '@ots/shared/ids';
import { cursorTag, pageSize, toConnection } from '@ots/shared/pagination';
import { readFeed } from './feed.ts';
import { DateTimeScalar } from '@ots/shared/scalars';
import { callerScope } from '@ots/shared/scope';
import type { EventsContext } from './context.ts';
import { eventTypesOf } from '@ots/shared/event-feed';
import { DEFAULT_GRACE_SECONDS } from './domain.ts';
import type { MutationDisableWebhookEndpointArgs, Resolvers } from './generated/resolvers-types.ts';
import {
  createEndpoint,
  disableEndpoint,
  enableEndpoint,
  redeliverEvent,
  removeEndpoint,
  rotateSecret,
  updateEndpointSettings,
  type EventsScope,
} from './operations.ts';
import { listAttempts, listEndpoints, type AttemptRow, type EndpointRow } from './repository.ts';

/** Output only: an event's data, already an object. */
const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  description: 'A JSON object.',
  serialize: (value) => value,
  parseValue: () => {
    throw new GraphQLError('JSON is an output type');
  },
  parseLiteral: () => {
    throw new GraphQLError('JSON is an output type');
  },
});

/** The tag of a webhook endpoint's delivery cursors; the former one is still accepted. */
export const DELIVERY_ORDERING = cursorTag('deliveries', 'ATTEMPTED_AT_DESC', 'deliveries:attempted_at_desc');

/** A row of the caller's account, or null for an absent, foreign or non-UUID id. */
async function loadById<Row>(loader: { load(id: Uuid): Promise<Row | null> }, id: string): Promise<Row | null> {
  const key = parseUuid(id);
  return key ? loader.load(key) : null;
}

function eventsScope(context: EventsContext): EventsScope {
  // One instant per mutation, so that every time it writes (a change, the end of a secret's grace) agrees.
  const at = context.now();
  return { ...callerScope(context.db, context, () => at), production: context.production, secretKey: context.secretKey };
}

const endpointPayload = (result: Result<EndpointRow>) =>
  result.ok ? { webhookEndpoint: result.value, error: null } : { webhookEndpoint: null, error: result.error };

const secretPayload = (result: Result<{ endpoint: EndpointRow; signingSecret: string }>) =>
  result.ok
    ? { webhookEndpoint: result.value.endpoint, signingSecret: result.value.signingSecret, error: null }
    : { webhookEndpoint: null, signingSecret: null, error: result.error };

function endpointMutation(run: (scope: EventsScope, id: ReceivedId) => Promise<Result<EndpointRow>>) {
  return async (_: unknown, { id }: MutationDisableWebhookEndpointArgs, context: EventsContext) =>
    endpointPayload(await run(eventsScope(context), receiveId(id)));
}

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  JSON: JSONScalar,
  Query: {
    listEvents: async (_, args, { db, caller, cursors }) => {
      const page = await readFeed(db, cursors, {
        accountId: caller.accountId,
        after: args.after,
        start: 'oldest',
        types: eventTypesOf(args.filter?.types),
        occurredAfter: args.filter?.occurredAfter ?? undefined,
        size: pageSize(args.first),
      });
      return {
        nodes: page.edges.map((edge) => edge.node),
        edges: page.edges,
        pageInfo: { hasNextPage: page.hasNextPage, endCursor: page.endCursor },
      };
    },
    event: (_, { id }, context) => loadById(context.eventById, id),
    listWebhookEndpoints: (_, __, { db, caller }) => listEndpoints(db, caller.accountId),
    webhookEndpoint: (_, { id }, context) => loadById(context.endpointById, id),
  },
  Mutation: {
    createWebhookEndpoint: async (_, { input }, context) =>
      secretPayload(await createEndpoint(eventsScope(context), input)),
    updateWebhookEndpoint: async (_, { id, input }, context) =>
      endpointPayload(await updateEndpointSettings(eventsScope(context), { ...input, id: receiveId(id) })),
    disableWebhookEndpoint: endpointMutation(disableEndpoint),
    enableWebhookEndpoint: endpointMutation(enableEndpoint),
    deleteWebhookEndpoint: endpointMutation(removeEndpoint),
    rotateWebhookSigningSecret: async (_, args, context) =>
      secretPayload(await rotateSecret(eventsScope(context), { id: receiveId(args.id), graceSeconds: args.graceSeconds ?? DEFAULT_GRACE_SECONDS })),
    redeliverEvent: async (_, args, context) => {
      const result = await redeliverEvent(eventsScope(context), { endpointId: receiveId(args.endpointId), eventId: receiveId(args.eventId) });
      return result.ok ? { event: result.value, error: null } : { event: null, error: result.error };
    },
  },
  Event: {
    occurredAt: (row) => row.occurred_at,
  },
  WebhookEndpoint: {
    eventTypes: (row) => row.event_types,
    disabledReason: (row) => row.disabled_reason,
    createdAt: (row) => row.created_at,
    deliveries: async (row, args, { db, caller, deliveryCursors }) => {
      const size = pageSize(args.first);
      const rows = await listAttempts(db, caller.accountId, row.id, deliveryCursors.decode(args.after), size + 1);
      return toConnection(rows, size, (attempt: AttemptRow) => deliveryCursors.encode({ at: attempt.attempted_at, id: attempt.id }));
    },
  },
  WebhookDelivery: {
    eventId: (row) => row.event_id,
    event: (row, _, context) => context.eventById.load(row.event_id),
    attemptedAt: (row) => row.attempted_at,
    statusCode: (row) => row.status_code,
    durationMs: (row) => row.duration_ms,
  },
};
