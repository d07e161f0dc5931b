import { randomUUID, type KeyObject } from 'node:crypto';
import { signAssertion } from '@ots/shared/assertion';
import { EVENT_TYPES } from '@ots/shared/outbox';
import { callSubgraph, SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import { GRACE_MS, type GraceChoice } from './domain.ts';
import { ConsoleError, NOT_FOUND, type Session } from './use-cases.ts';

/**
 * Settings → Webhooks: the console's calls to the events subgraph, which alone owns endpoints and
 * deliveries. The console is signed in with the owner's session, not an API key, so each call
 * carries a gateway assertion minted here for the session's account (the gateway process holds
 * ASSERTION_PRIVATE_KEY), sent straight to the events subgraph like the gateway's own fetches.
 */

export interface WebhooksLink {
  url: string;
  timeoutMs: number;
  assertionPrivateKey: KeyObject;
  assertionTtlSeconds: number;
}

/** How many of an endpoint's latest delivery attempts the page lists. */
export const RECENT_DELIVERIES = 10;

export interface WebhookDeliveryView {
  id: string;
  eventId: string;
  eventType: string | null;
  attempt: number;
  attemptedAt: string;
  statusCode: number | null;
  failure: string | null;
  succeeded: boolean;
  durationMs: number;
}

export interface WebhookEndpointView {
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  status: 'ENABLED' | 'DISABLED';
  disabledReason: string | null;
  createdAt: string;
  deliveries: WebhookDeliveryView[];
}

const ENDPOINT_FIELDS = `id url eventTypes description status disabledReason createdAt
  deliveries(first: ${RECENT_DELIVERIES}) { nodes { id eventId event { type } attempt attemptedAt statusCode failure succeeded durationMs } }`;

type EndpointNode = Omit<WebhookEndpointView, 'deliveries'> & {
  deliveries: { nodes: (Omit<WebhookDeliveryView, 'eventType'> & { event: { type: string } | null })[] };
};
interface PayloadError {
  message: string;
  code: string;
  field: string | null;
}
interface Payload {
  webhookEndpoint: EndpointNode | null;
  signingSecret?: string | null;
  error: PayloadError | null;
}

function endpointView(node: EndpointNode): WebhookEndpointView {
  return {
    ...node,
    deliveries: node.deliveries.nodes.map(({ event, ...delivery }) => ({ ...delivery, eventType: event?.type ?? null })),
  };
}

/**
 * The key id in the console's assertions. Real API key ids are UUIDs, so `console:<owner id>` can
 * never name one (nor be taken for one by a subgraph that looks a key up); it also tells a log
 * reader which owner acted.
 */
export function consoleApiKeyId(session: Session): string {
  return `console:${session.owner.id}`;
}

async function call<T>(link: WebhooksLink, session: Session, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const assertion = signAssertion(link.assertionPrivateKey, { accountId: session.account.id, apiKeyId: consoleApiKeyId(session) }, link.assertionTtlSeconds);
  try {
    const response = await callSubgraph<T>({
      caller: 'console',
      subgraph: 'events',
      url: link.url,
      assertion,
      requestId: `console-${randomUUID()}`,
      timeoutMs: link.timeoutMs,
      query,
      variables,
    });
    if (response.data === null || response.data === undefined || (response.errors && response.errors.length > 0)) {
      throw new SubgraphUnavailableError(`events answered with errors: ${response.errors?.map((error) => error.message).join('; ') ?? 'no data'}`);
    }
    return response.data;
  } catch (error) {
    if (error instanceof SubgraphUnavailableError) throw new ConsoleError(503, 'Webhooks are unavailable right now. Try again in a moment.');
    throw error;
  }
}

/** A payload's error as the console's refusal: the events service's wording, its field, and a matching status. */
function settled(payload: Payload): WebhookEndpointView {
  if (payload.error) {
    const status = payload.error.code === 'NOT_FOUND' ? 404 : payload.error.code === 'WEBHOOK_ENDPOINT_LIMIT' ? 409 : 400;
    // Not found is one answer, as on every console route: it says nothing of whose the id is.
    if (status === 404) throw new ConsoleError(404, NOT_FOUND);
    throw new ConsoleError(status, payload.error.message, payload.error.field ?? undefined);
  }
  return endpointView(payload.webhookEndpoint!);
}

export async function listEndpoints(link: WebhooksLink, session: Session) {
  const data = await call<{ listWebhookEndpoints: EndpointNode[] }>(link, session, `query ConsoleWebhooks { listWebhookEndpoints { ${ENDPOINT_FIELDS} } }`);
  return { endpoints: data.listWebhookEndpoints.map(endpointView), eventTypes: [...EVENT_TYPES] };
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new ConsoleError(400, `${field} must be a string`, field);
  return value;
}

export async function createEndpoint(link: WebhooksLink, session: Session, body: Record<string, unknown>) {
  const url = optionalString(body.url, 'url');
  if (!url) throw new ConsoleError(400, 'Enter the URL that will receive the webhooks', 'url');
  const eventTypes = body.eventTypes ?? [];
  if (!Array.isArray(eventTypes) || !eventTypes.every((type) => typeof type === 'string')) throw new ConsoleError(400, 'eventTypes must be a list of event types', 'eventTypes');
  const input = { url, eventTypes, description: optionalString(body.description, 'description')?.trim() || undefined };
  const data = await call<{ createWebhookEndpoint: Payload }>(
    link,
    session,
    `mutation ConsoleCreateWebhook($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { webhookEndpoint { ${ENDPOINT_FIELDS} } signingSecret error { message code field } } }`,
    { input },
  );
  const endpoint = settled(data.createWebhookEndpoint);
  return { endpoint, signingSecret: data.createWebhookEndpoint.signingSecret! };
}

export const ENDPOINT_CHANGES = {
  disable: 'disableWebhookEndpoint',
  enable: 'enableWebhookEndpoint',
  delete: 'deleteWebhookEndpoint',
} as const;

export type EndpointChange = keyof typeof ENDPOINT_CHANGES;

/** Disables, enables or deletes one of the account's endpoints; another account's id is not found. */
export async function changeEndpoint(link: WebhooksLink, session: Session, id: string, change: EndpointChange) {
  const operation = ENDPOINT_CHANGES[change];
  const data = await call<Record<string, Payload>>(
    link,
    session,
    `mutation ConsoleChangeWebhook($id: ID!) { ${operation}(id: $id) { webhookEndpoint { ${ENDPOINT_FIELDS} } error { message code field } } }`,
    { id },
  );
  return { endpoint: settled(data[operation]!) };
}

/** A new signing secret, shown once; the old one keeps signing for the grace period. */
export async function rotateSecret(link: WebhooksLink, session: Session, id: string, body: { grace?: unknown }) {
  const grace = body.grace;
  if (typeof grace !== 'string' || !Object.hasOwn(GRACE_MS, grace)) throw new ConsoleError(400, 'Choose a grace period: now, 1 hour, 24 hours or 7 days', 'grace');
  const graceSeconds = GRACE_MS[grace as GraceChoice] / 1000;
  const data = await call<{ rotateWebhookSigningSecret: Payload }>(
    link,
    session,
    `mutation ConsoleRotateWebhookSecret($id: ID!, $graceSeconds: Int!) { rotateWebhookSigningSecret(id: $id, graceSeconds: $graceSeconds) { webhookEndpoint { ${ENDPOINT_FIELDS} } signingSecret error { message code field } } }`,
    { id, graceSeconds },
  );
  const endpoint = settled(data.rotateWebhookSigningSecret);
  return { endpoint, signingSecret: data.rotateWebhookSigningSecret.signingSecret! };
}
