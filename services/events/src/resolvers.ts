import { GraphQLError, GraphQLScalarType } from 'graphql';
import { decodeFeedCursor, encodeFeedCursor, positionOf } from '@ots/shared/commit-order';
import { badUserInput, type Result } from '@ots/shared/errors';
import { isUuid } from '@ots/shared/ids';
import { loaderById } from '@ots/shared/loaders';
import { isEventType } from '@ots/shared/outbox';
import { decodeCursor, encodeCursor, pageSize, toConnection } from '@ots/shared/pagination';
import { DateTimeScalar } from '@ots/shared/scalars';
import type { BaseContext } from '@ots/shared/subgraph-server';
import { DEFAULT_GRACE_SECONDS } from './domain.ts';
import type { MutationDisableWebhookEndpointArgs, Resolvers } from './generated/resolvers-types.ts';
import {
  canonicalId,
  createEndpoint,
  disableEndpoint,
  enableEndpoint,
  redeliverEvent,
  removeEndpoint,
  rotateSecret,
  updateEndpointSettings,
  type OperationContext,
} from './operations.ts';
import {
  findEndpointsByIds,
  findEventsByIds,
  listAttempts,
  listEndpoints,
  listEvents,
  type AttemptPosition,
  type AttemptRow,
  type EndpointRow,
  type EventRow,
  type EventsDb,
} from './repository.ts';

export interface EventsContext extends BaseContext {
  db: EventsDb;
  production: boolean;
  secretKey: Buffer;
  now(): Date;
  /** Per request and scoped to the caller's account. */
  eventById: ReturnType<typeof loaderById<EventRow>>;
  endpointById: ReturnType<typeof loaderById<EndpointRow>>;
}

export function createEventsContext(base: BaseContext, deps: { db: EventsDb; production: boolean; secretKey: Buffer; now(): Date }): EventsContext {
  const accountId = base.caller.accountId;
  return {
    ...base,
    ...deps,
    eventById: loaderById((ids) => findEventsByIds(deps.db, accountId, ids)),
    endpointById: loaderById((ids) => findEndpointsByIds(deps.db, accountId, ids)),
  };
}

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

const EVENT_FEED = 'events:commit_order';
const DELIVERY_ORDERING = 'deliveries:attempted_at_desc';

function eventCursor(row: EventRow): string {
  return encodeFeedCursor(EVENT_FEED, positionOf(row));
}

function deliveryCursor(row: AttemptRow): string {
  return encodeCursor(DELIVERY_ORDERING, [row.attempted_at.toISOString(), row.id]);
}

function deliveryPositionAfter(after: string | null | undefined): AttemptPosition | undefined {
  const keys = decodeCursor(after, DELIVERY_ORDERING, 2);
  if (!keys) return undefined;
  const [attemptedAt, id] = keys as [string, string];
  const date = new Date(attemptedAt);
  if (Number.isNaN(date.getTime()) || date.toISOString() !== attemptedAt || !isUuid(id)) {
    throw badUserInput('after is not a cursor issued for this list and ordering', 'after');
  }
  return { attemptedAt: date, id };
}

async function loadById<Row>(loader: { load(id: string): Promise<Row | null> }, id: string): Promise<Row | null> {
  const key = canonicalId(id);
  return key ? loader.load(key) : null;
}

function operationContext(context: EventsContext): OperationContext {
  return { db: context.db, accountId: context.caller.accountId, production: context.production, now: context.now(), secretKey: context.secretKey };
}

const endpointPayload = (result: Result<EndpointRow>) =>
  result.ok ? { webhookEndpoint: result.value, error: null } : { webhookEndpoint: null, error: result.error };

const secretPayload = (result: Result<{ endpoint: EndpointRow; signingSecret: string }>) =>
  result.ok
    ? { webhookEndpoint: result.value.endpoint, signingSecret: result.value.signingSecret, error: null }
    : { webhookEndpoint: null, signingSecret: null, error: result.error };

function endpointMutation(run: (context: OperationContext, id: string) => Promise<Result<EndpointRow>>) {
  return async (_: unknown, { id }: MutationDisableWebhookEndpointArgs, context: EventsContext) => endpointPayload(await run(operationContext(context), id));
}

export const resolvers: Resolvers = {
  DateTime: DateTimeScalar,
  JSON: JSONScalar,
  Query: {
    listEvents: async (_, args, { db, caller }) => {
      const size = pageSize(args.first);
      const types = args.filter?.types ?? undefined;
      const unknown = types?.find((type) => !isEventType(type));
      if (unknown !== undefined) throw badUserInput(`filter.types holds an unknown event type: ${JSON.stringify(unknown)}`, 'filter');
      const rows = await listEvents(db, caller.accountId, {
        types,
        occurredAfter: args.filter?.occurredAfter ?? undefined,
        after: decodeFeedCursor(EVENT_FEED, args.after, isUuid),
        limit: size + 1,
      });
      return toConnection(rows, size, eventCursor);
    },
    event: (_, { id }, context) => loadById(context.eventById, id),
    listWebhookEndpoints: (_, __, { db, caller }) => listEndpoints(db, caller.accountId),
    webhookEndpoint: (_, { id }, context) => loadById(context.endpointById, id),
  },
  Mutation: {
    createWebhookEndpoint: async (_, { input }, context) =>
      secretPayload(await createEndpoint(operationContext(context), input)),
    updateWebhookEndpoint: async (_, { id, input }, context) =>
      endpointPayload(await updateEndpointSettings(operationContext(context), id, input)),
    disableWebhookEndpoint: endpointMutation(disableEndpoint),
    enableWebhookEndpoint: endpointMutation(enableEndpoint),
    deleteWebhookEndpoint: endpointMutation(removeEndpoint),
    rotateWebhookSigningSecret: async (_, args, context) =>
      secretPayload(await rotateSecret(operationContext(context), args.id, args.graceSeconds ?? DEFAULT_GRACE_SECONDS)),
    redeliverEvent: async (_, args, context) => {
      const result = await redeliverEvent(operationContext(context), args.endpointId, args.eventId);
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
    deliveries: async (row, args, { db, caller }) => {
      const size = pageSize(args.first);
      const rows = await listAttempts(db, caller.accountId, row.id, deliveryPositionAfter(args.after), size + 1);
      return toConnection(rows, size, deliveryCursor);
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
