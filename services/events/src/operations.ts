import { fail, ok, TEMPORARILY_UNAVAILABLE_MESSAGE, type Result } from '@ots/shared/errors';
import type { ReceivedId } from '@ots/shared/ids';
import type { Scope } from '@ots/shared/scope';
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
import { sealSecret } from '@ots/shared/secret-box';
import { resolvePublicAddresses } from './url-policy.ts';

/**
 * The mutations, each `(scope, request)`: validation from the domain, each read-decide-write under a
 * row lock (or the account's endpoint lock for the 16-endpoint limit).
 */
export interface EventsScope extends Scope<EventsDb> {
  /** Endpoint addresses must resolve to public ones (url-policy.ts). */
  production: boolean;
  /** Seals signing secrets at rest (shared/src/secret-box.ts). */
  secretKey: Buffer;
}

const endpointNotFound = (id: string): Result<never> => fail('NOT_FOUND', notFoundInAccount('webhook endpoint', id), 'id');

/**
 * How long saving an endpoint waits for its name's addresses: well within the gateway's wait for this
 * subgraph (5 s by default), so that a name whose DNS never answers is refused TEMPORARILY_UNAVAILABLE
 * with nothing created, rather than created after the gateway answered the client an outage (and the
 * signing secret, shown once, shown to no one).
 */
const SAVE_LOOKUP_TIMEOUT_MS = 3_000;

/** Syntax, then in production the name's addresses: every one must be public (url-policy.ts). */
async function validateUrl(raw: string, production: boolean): Promise<Result<string>> {
  const url = validateUrlSyntax(raw, production);
  if (!url.ok) return url;
  if (production) {
    try {
      await resolvePublicAddresses(url.value.hostname, { signal: AbortSignal.timeout(SAVE_LOOKUP_TIMEOUT_MS) });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A resolver that cannot answer now says nothing of the name: the client may retry.
      if (code === 'EAI_AGAIN') return fail('TEMPORARILY_UNAVAILABLE', TEMPORARILY_UNAVAILABLE_MESSAGE);
      if (code === 'EADDRNOTALLOWED') return fail('VALIDATION_FAILED', `url is not allowed: ${(error as Error).message}`, 'url');
      throw error;
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
  scope: EventsScope,
  input: EndpointInput & { url: string },
): Promise<Result<{ endpoint: EndpointRow; signingSecret: string }>> {
  const url = await validateUrl(input.url, scope.production);
  if (!url.ok) return url;
  const eventTypes = validateEventTypes(input.eventTypes);
  if (!eventTypes.ok) return eventTypes;
  const description = validateDescription(input.description);
  if (!description.ok) return description;
  const secret = newSigningSecret();
  return scope.db.transaction().execute(async (trx) => {
    await lockAccountEndpoints(trx, scope.accountId);
    if ((await countEndpoints(trx, scope.accountId)) >= MAX_ENDPOINTS_PER_ACCOUNT) {
      return fail('WEBHOOK_ENDPOINT_LIMIT', `An account may have at most ${MAX_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first`);
    }
    const endpoint = await insertEndpoint(
      trx,
      scope.accountId,
      { url: url.value, eventTypes: eventTypes.value, description: description.value, secret: sealSecret(scope.secretKey, secret, scope.accountId) },
      scope.now(),
    );
    return ok({ endpoint, signingSecret: secret });
  });
}

/** An absent field stays as it is; `description: null` clears it; `url` and `eventTypes` cannot be null. */
export async function updateEndpointSettings(scope: EventsScope, { id, ...input }: EndpointInput & { id: ReceivedId }): Promise<Result<EndpointRow>> {
  const changes: EndpointChanges = {};
  if (input.url !== undefined) {
    if (input.url === null) return fail('VALIDATION_FAILED', 'url cannot be cleared; leave it out to keep the current one', 'url');
    const url = await validateUrl(input.url, scope.production);
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
  return changeEndpoint(scope, id, () => changes);
}

/** Locks the endpoint, asks `decide` what to change, writes it; NOT_FOUND for an absent or foreign id. */
async function changeEndpoint(
  scope: EventsScope,
  id: ReceivedId,
  decide: (current: EndpointRow) => EndpointChanges,
  afterwards?: (trx: EventsDb, endpoint: EndpointRow) => Promise<void>,
): Promise<Result<EndpointRow>> {
  const endpointId = id.uuid;
  if (!endpointId) return endpointNotFound(id.sent);
  return scope.db.transaction().execute(async (trx) => {
    const current = await lockEndpoint(trx, scope.accountId, endpointId);
    if (!current) return endpointNotFound(id.sent);
    const changes = decide(current);
    const endpoint = Object.keys(changes).length === 0 ? current : await updateEndpoint(trx, scope.accountId, endpointId, changes, scope.now());
    await afterwards?.(trx, endpoint);
    return ok(endpoint);
  });
}

/** Disabling stops deliveries (pending retries wait); disabling a disabled endpoint changes nothing. */
export function disableEndpoint(scope: EventsScope, id: ReceivedId): Promise<Result<EndpointRow>> {
  return changeEndpoint(
    scope,
    id,
    (current) => (current.status === 'DISABLED' ? {} : { status: 'DISABLED', disabled_reason: 'Disabled by the account' }),
    (trx, endpoint) => parkPendingMessages(trx, scope.accountId, endpoint.id),
  );
}

/** Enabling clears the reason and the failure streak, and makes pending retries due at once. */
export function enableEndpoint(scope: EventsScope, id: ReceivedId): Promise<Result<EndpointRow>> {
  let wasDisabled = false;
  return changeEndpoint(
    scope,
    id,
    (current) => {
      wasDisabled = current.status === 'DISABLED';
      return wasDisabled ? { status: 'ENABLED', disabled_reason: null, failing_since: null } : {};
    },
    async (trx, endpoint) => {
      if (wasDisabled) await resumePendingMessages(trx, scope.accountId, endpoint.id, scope.now());
    },
  );
}

/** Deletes the endpoint with its pending messages and delivery history; returns it as it was. */
export async function removeEndpoint(scope: EventsScope, id: ReceivedId): Promise<Result<EndpointRow>> {
  const endpointId = id.uuid;
  if (!endpointId) return endpointNotFound(id.sent);
  const deleted = await deleteEndpoint(scope.db, scope.accountId, endpointId);
  return deleted ? ok(deleted) : endpointNotFound(id.sent);
}

/**
 * A new secret signs from now on; the old one keeps signing beside it for `graceSeconds`, so a
 * receiver can switch at its own pace. A rotation during a grace ends the older secret at once.
 */
export async function rotateSecret(
  scope: EventsScope,
  { id, graceSeconds }: { id: ReceivedId; graceSeconds: number },
): Promise<Result<{ endpoint: EndpointRow; signingSecret: string }>> {
  const grace = validateGraceSeconds(graceSeconds);
  if (!grace.ok) return grace;
  const secret = newSigningSecret();
  const rotated = await changeEndpoint(scope, id, (current) => ({
    secret: sealSecret(scope.secretKey, secret, scope.accountId),
    previous_secret: grace.value > 0 ? current.secret : null,
    previous_secret_expires_at: grace.value > 0 ? new Date(scope.now().getTime() + grace.value * 1000) : null,
  }));
  return rotated.ok ? ok({ endpoint: rotated.value, signingSecret: secret }) : rotated;
}

/** Sends the event to the endpoint again, whatever became of earlier attempts (same webhook-id). */
export async function redeliverEvent(scope: EventsScope, { endpointId, eventId }: { endpointId: ReceivedId; eventId: ReceivedId }): Promise<Result<EventRow>> {
  const endpointKey = endpointId.uuid;
  if (!endpointKey) return fail('NOT_FOUND', notFoundInAccount('webhook endpoint', endpointId.sent), 'endpointId');
  const eventKey = eventId.uuid;
  if (!eventKey) return fail('NOT_FOUND', notFoundInAccount('event', eventId.sent), 'eventId');
  return scope.db.transaction().execute(async (trx) => {
    const endpoint = await lockEndpoint(trx, scope.accountId, endpointKey);
    if (!endpoint) return fail('NOT_FOUND', notFoundInAccount('webhook endpoint', endpointId.sent), 'endpointId');
    const [event] = await findEventsByIds(trx, scope.accountId, [eventKey]);
    if (!event) return fail('NOT_FOUND', notFoundInAccount('event', eventId.sent), 'eventId');
    if (endpoint.status === 'DISABLED') {
      return fail('VALIDATION_FAILED', `Webhook endpoint ${endpoint.id} is disabled; enable it before redelivering`, 'endpointId');
    }
    await insertManualMessage(trx, scope.accountId, endpoint.id, event.id, scope.now());
    return ok(event);
  });
}
