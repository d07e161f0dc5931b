import { randomUUID, type KeyObject } from 'node:crypto';
import { signAssertion } from '@ots/shared/assertion';
import { EVENT_TYPES } from '@ots/shared/contracts/events';
import { callSubgraph, SubgraphUnavailableError } from '@ots/shared/subgraph-client';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import {
  ConsoleCreateWebhookDocument,
  ConsoleDeleteWebhookDocument,
  ConsoleDisableWebhookDocument,
  ConsoleEnableWebhookDocument,
  ConsoleRotateWebhookSecretDocument,
  ConsoleWebhooksDocument,
  type ConsoleEndpointFragment,
} from '../generated/events-calls.ts';
import { GRACE_PROBLEM, graceMsOf } from './domain.ts';
import type { OwnerScope } from '../operations.ts';
import { ConsoleError, NOT_FOUND } from './operations.ts';

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

/** A signed-in owner's scope with the link to the events subgraph, which every webhook use case calls. */
export interface WebhooksScope extends OwnerScope {
  events: WebhooksLink;
}

interface WebhookDeliveryView {
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

interface Payload {
  webhookEndpoint: ConsoleEndpointFragment | null;
  error: { message: string; code: string; field: string | null } | null;
}

function endpointView(node: ConsoleEndpointFragment): WebhookEndpointView {
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
function consoleApiKeyId(scope: WebhooksScope): string {
  return `console:${scope.actor.ownerId}`;
}

/** An owner signed in to the console manages the account's webhook endpoints and reads their deliveries. */
const CONSOLE_SCOPES = ['read', 'webhooks:write'];

async function call<Result, Variables>(scope: WebhooksScope, document: TypedDocumentNode<Result, Variables>, variables: Variables): Promise<Result> {
  const link = scope.events;
  const assertion = signAssertion(link.assertionPrivateKey, { accountId: scope.accountId, apiKeyId: consoleApiKeyId(scope), scopes: CONSOLE_SCOPES }, link.assertionTtlSeconds);
  try {
    const response = await callSubgraph({
      caller: 'console',
      subgraph: 'events',
      url: link.url,
      assertion,
      requestId: `console-${randomUUID()}`,
      timeoutMs: link.timeoutMs,
      document,
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

export async function listEndpoints(scope: WebhooksScope) {
  const data = await call(scope, ConsoleWebhooksDocument, {});
  return { endpoints: data.listWebhookEndpoints.map(endpointView), eventTypes: [...EVENT_TYPES] };
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new ConsoleError(400, `${field} must be a string`, field);
  return value;
}

export async function createEndpoint(scope: WebhooksScope, { body }: { body: Record<string, unknown> }) {
  const url = optionalString(body.url, 'url');
  if (!url) throw new ConsoleError(400, 'Enter the URL that will receive the webhooks', 'url');
  const eventTypes = body.eventTypes ?? [];
  if (!Array.isArray(eventTypes) || !eventTypes.every((type) => typeof type === 'string')) throw new ConsoleError(400, 'eventTypes must be a list of event types', 'eventTypes');
  const input = { url, eventTypes, description: optionalString(body.description, 'description')?.trim() || undefined };
  const data = await call(scope, ConsoleCreateWebhookDocument, { input });
  const endpoint = settled(data.createWebhookEndpoint);
  return { endpoint, signingSecret: data.createWebhookEndpoint.signingSecret! };
}

export const ENDPOINT_CHANGES = {
  disable: ConsoleDisableWebhookDocument,
  enable: ConsoleEnableWebhookDocument,
  delete: ConsoleDeleteWebhookDocument,
} as const;

export type EndpointChange = keyof typeof ENDPOINT_CHANGES;

/** Disables, enables or deletes one of the account's endpoints; another account's id is not found. */
export async function changeEndpoint(scope: WebhooksScope, { id, change }: { id: string; change: EndpointChange }) {
  const data = await call(scope, ENDPOINT_CHANGES[change], { id });
  return { endpoint: settled(data.change) };
}

/** A new signing secret, shown once; the old one keeps signing for the grace period. */
export async function rotateSecret(scope: WebhooksScope, { id, body }: { id: string; body: { grace?: unknown } }) {
  const graceMs = graceMsOf(body.grace);
  if (graceMs === undefined) throw new ConsoleError(400, GRACE_PROBLEM, 'grace');
  const graceSeconds = graceMs / 1000;
  const data = await call(scope, ConsoleRotateWebhookSecretDocument, { id, graceSeconds });
  const endpoint = settled(data.rotateWebhookSigningSecret);
  return { endpoint, signingSecret: data.rotateWebhookSigningSecret.signingSecret! };
}
