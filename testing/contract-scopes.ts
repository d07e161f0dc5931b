import type { ApiKeyScope } from '@ots/shared/scopes';

/**
 * Contract section 5, "Scopes and allowed addresses": the scope each root field of the published
 * API needs, written out from the contract's table (and section 6's names of the webhook endpoint
 * fields) rather than read from the supergraph, so that the scope tests hold the gateway's
 * declarations to the contract instead of to themselves. `null` is `viewer`, which needs none. A
 * root field added to the API without a row here fails those tests until the contract gives it one.
 */
export const CONTRACT_ROOT_FIELD_SCOPES: Readonly<Record<string, ApiKeyScope | null>> = {
  'Query.viewer': null,

  // "every query but viewer, and the events subscription"
  'Query.listOrderSubmissions': 'read',
  'Query.orderSubmission': 'read',
  'Query.listFills': 'read',
  'Query.fill': 'read',
  'Query.listStrategies': 'read',
  'Query.strategy': 'read',
  'Query.listEvents': 'read',
  'Query.event': 'read',
  'Query.listWebhookEndpoints': 'read',
  'Query.webhookEndpoint': 'read',
  'Subscription.events': 'read',

  'Mutation.submitOrder': 'orders:write',
  'Mutation.cancelOrderSubmission': 'orders:write',
  'Mutation.replaceOrderSubmission': 'orders:write',
  'Mutation.cancelOrderSubmissions': 'orders:write',

  'Mutation.recordFill': 'fills:write',

  'Mutation.createStrategy': 'strategies:write',
  'Mutation.updateStrategy': 'strategies:write',
  'Mutation.pauseStrategy': 'strategies:write',
  'Mutation.resumeStrategy': 'strategies:write',
  'Mutation.archiveStrategy': 'strategies:write',

  // "the webhook endpoint mutations and redeliverEvent"
  'Mutation.createWebhookEndpoint': 'webhooks:write',
  'Mutation.updateWebhookEndpoint': 'webhooks:write',
  'Mutation.disableWebhookEndpoint': 'webhooks:write',
  'Mutation.enableWebhookEndpoint': 'webhooks:write',
  'Mutation.deleteWebhookEndpoint': 'webhooks:write',
  'Mutation.rotateWebhookSigningSecret': 'webhooks:write',
  'Mutation.redeliverEvent': 'webhooks:write',
};

/**
 * Root fields of the supergraph that the published API hides (`@inaccessible`): one subgraph's call
 * to another on a client's behalf, never a client's own, so the contract's table does not name them;
 * each still needs the scope of the client's field it serves, which the subgraph checks again.
 */
export const INTERNAL_ROOT_FIELD_SCOPES: Readonly<Record<string, ApiKeyScope>> = {
  // fills asks orders to decide and record a fill for recordFill.
  'Mutation.applyFill': 'fills:write',
};
