import { fail, ok, type Result } from '@ots/shared/errors';
import type { ReceivedId } from '@ots/shared/ids';
import { notFoundInAccount } from '@ots/shared/messages';
import {
  MAX_ENDPOINTS_PER_ACCOUNT,
  newSigningSecret,
  validateDescription,
  validateEventTypes,
  validateGraceSeconds,
  validateUrlSyntax,
} from './domain.ts';
import {
  countEndpoints,
  deleteEndpoint,
  findEventsByIds,
  insertEndpoint,
  insertManualMessage,
  lockAccountEndpoints,
  lockEndpoint,
  parkPendingMessages,
  resumePendingMessages,
  updateEndpoint,
  type EndpointChanges,
  type EndpointRow,
  type EventRow,
  type EventsDb,
} from './repository.ts';
import { sealSecret } from './secret-box.ts';
import { resolvePublicAddresses } from './url-policy.ts';

/**
 * The mutations: validation from the domain, each read-decide-write under a row lock (or the
 * account's endpoint lock for the 16-endpoint limit).
 */

export interface OperationContext {
  db: EventsDb;
  accountId: string;
  production: boolean;
  now: Date;
  /** Seals signing secrets at rest (secret-box.ts). */
  secretKey: Buffer;
}

const endpointNotFound = (id: string): Result<never> => fail('NOT_FOUND', notFoundInAccount('webhook endpoint', id), 'id');

/** Syntax, then in production the name's addresses: every one must be public (url-policy.ts). */
async function validateUrl(raw: string, production: boolean): Promise<Result<string>> {
  const url = validateUrlSyntax(raw, production);
  if (!url.ok) return url;
  if (production) {
    try {
      await resolvePublicAddresses(url.value.hostname);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason = code === 'EADDRNOTALLOWED' ? (error as Error).message : `${url.value.hostname} does not resolve`;
      return fail('VALIDATION_FAILED', `url is not allowed: ${reason}`, 'url');
    }
  }
  return ok(url.value.href);
}

export interface EndpointInput {
  url?: string | null;
  eventTypes?: string[] | null;
  description?: string | null;
}

export async function createEndpoint(
  context: OperationContext,
  input: EndpointInput & { url: string },
): Promise<Result<{ endpoint: EndpointRow; signingSecret: string }>> {
  const url = await validateUrl(input.url, context.production);
  if (!url.ok) return url;
  const eventTypes = validateEventTypes(input.eventTypes);
  if (!eventTypes.ok) return eventTypes;
  const description = validateDescription(input.description);
  if (!description.ok) return description;
  const secret = newSigningSecret();
  return context.db.transaction().execute(async (trx) => {
    await lockAccountEndpoints(trx, context.accountId);
    if ((await countEndpoints(trx, context.accountId)) >= MAX_ENDPOINTS_PER_ACCOUNT) {
      return fail('WEBHOOK_ENDPOINT_LIMIT', `An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first`);
    }
    const endpoint = await insertEndpoint(
      trx,
      context.accountId,
      { url: url.value, eventTypes: eventTypes.value, description: description.value, secret: sealSecret(context.secretKey, secret, context.accountId) },
      context.now,
    );
    return ok({ endpoint, signingSecret: secret });
  });
}

/** An absent field stays as it is; `description: null` clears it; `url` and `eventTypes` cannot be null. */
export async function updateEndpointSettings(context: OperationContext, id: ReceivedId, input: EndpointInput): Promise<Result<EndpointRow>> {
  const changes: EndpointChanges = {};
  if (input.url !== undefined) {
    if (input.url === null) return fail('VALIDATION_FAILED', 'url cannot be cleared; leave it out to keep the current one', 'url');
    const url = await validateUrl(input.url, context.production);
    if (!url.ok) return url;
    changes.url = url.value;
  }
  if (input.eventTypes !== undefined) {
    if (input.eventTypes === null) {
      return fail('VALIDATION_FAILED', 'eventTypes cannot be null; an empty list subscribes to every type', 'eventTypes');
    }
    const eventTypes = validateEventTypes(input.eventTypes);
    if (!eventTypes.ok) return eventTypes;
    changes.event_types = eventTypes.value;
  }
  if (input.description !== undefined) {
    const description = validateDescription(input.description);
    if (!description.ok) return description;
    changes.description = description.value;
  }
  return changeEndpoint(context, id, () => changes);
}

/** Locks the endpoint, asks `decide` what to change, writes it; NOT_FOUND for an absent or foreign id. */
async function changeEndpoint(
  context: OperationContext,
  id: ReceivedId,
  decide: (current: EndpointRow) => EndpointChanges,
  afterwards?: (trx: EventsDb, endpoint: EndpointRow) => Promise<void>,
): Promise<Result<EndpointRow>> {
  const endpointId = id.uuid;
  if (!endpointId) return endpointNotFound(id.sent);
  return context.db.transaction().execute(async (trx) => {
    const current = await lockEndpoint(trx, context.accountId, endpointId);
    if (!current) return endpointNotFound(id.sent);
    const changes = decide(current);
    const endpoint = Object.keys(changes).length === 0 ? current : await updateEndpoint(trx, context.accountId, endpointId, changes, context.now);
    await afterwards?.(trx, endpoint);
    return ok(endpoint);
  });
}

/** Disabling stops deliveries (pending retries wait); disabling a disabled endpoint changes nothing. */
export function disableEndpoint(context: OperationContext, id: ReceivedId): Promise<Result<EndpointRow>> {
  return changeEndpoint(
    context,
    id,
    (current) => (current.status === 'DISABLED' ? {} : { status: 'DISABLED', disabled_reason: 'Disabled by the account' }),
    (trx, endpoint) => parkPendingMessages(trx, context.accountId, endpoint.id),
  );
}

/** Enabling clears the reason and the failure streak, and makes pending retries due at once. */
export function enableEndpoint(context: OperationContext, id: ReceivedId): Promise<Result<EndpointRow>> {
  let wasDisabled = false;
  return changeEndpoint(
    context,
    id,
    (current) => {
      wasDisabled = current.status === 'DISABLED';
      return wasDisabled ? { status: 'ENABLED', disabled_reason: null, failing_since: null } : {};
    },
    async (trx, endpoint) => {
      if (wasDisabled) await resumePendingMessages(trx, context.accountId, endpoint.id, context.now);
    },
  );
}

/** Deletes the endpoint with its pending messages and delivery history; returns it as it was. */
export async function removeEndpoint(context: OperationContext, id: ReceivedId): Promise<Result<EndpointRow>> {
  const endpointId = id.uuid;
  if (!endpointId) return endpointNotFound(id.sent);
  const deleted = await deleteEndpoint(context.db, context.accountId, endpointId);
  return deleted ? ok(deleted) : endpointNotFound(id.sent);
}

/**
 * A new secret signs from now on; the old one keeps signing beside it for `graceSeconds`, so a
 * receiver can switch at its own pace. A rotation during a grace ends the older secret at once.
 */
export async function rotateSecret(
  context: OperationContext,
  id: ReceivedId,
  graceSeconds: number,
): Promise<Result<{ endpoint: EndpointRow; signingSecret: string }>> {
  const grace = validateGraceSeconds(graceSeconds);
  if (!grace.ok) return grace;
  const secret = newSigningSecret();
  const rotated = await changeEndpoint(context, id, (current) => ({
    secret: sealSecret(context.secretKey, secret, context.accountId),
    previous_secret: grace.value > 0 ? current.secret : null,
    previous_secret_expires_at: grace.value > 0 ? new Date(context.now.getTime() + grace.value * 1000) : null,
  }));
  return rotated.ok ? ok({ endpoint: rotated.value, signingSecret: secret }) : rotated;
}

/** Sends the event to the endpoint again, whatever became of earlier attempts (same webhook-id). */
export async function redeliverEvent(context: OperationContext, endpointId: ReceivedId, eventId: ReceivedId): Promise<Result<EventRow>> {
  const endpointKey = endpointId.uuid;
  if (!endpointKey) return fail('NOT_FOUND', notFoundInAccount('webhook endpoint', endpointId.sent), 'endpointId');
  const eventKey = eventId.uuid;
  if (!eventKey) return fail('NOT_FOUND', notFoundInAccount('event', eventId.sent), 'eventId');
  return context.db.transaction().execute(async (trx) => {
    const endpoint = await lockEndpoint(trx, context.accountId, endpointKey);
    if (!endpoint) return fail('NOT_FOUND', notFoundInAccount('webhook endpoint', endpointId.sent), 'endpointId');
    const [event] = await findEventsByIds(trx, context.accountId, [eventKey]);
    if (!event) return fail('NOT_FOUND', notFoundInAccount('event', eventId.sent), 'eventId');
    if (endpoint.status === 'DISABLED') {
      return fail('VALIDATION_FAILED', `Webhook endpoint ${endpoint.id} is disabled; enable it before redelivering`, 'endpointId');
    }
    await insertManualMessage(trx, context.accountId, endpoint.id, event.id, context.now);
    return ok(event);
  });
}
