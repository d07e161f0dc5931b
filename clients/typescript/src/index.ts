export { OtsClient, type Event, type Fill, type ListOptions, type MutationOptions, type Order, type OtsClientOptions, type Position, type Strategy, type WebhookDelivery, type WebhookEndpoint } from './client.js';
// Every error class is public: callers tell failures apart by class.
export * from './errors.js';
export { Paginated } from './paging.js';
export { EventStream, type EventStreamOptions } from './stream.js';
export { verifyWebhook, type WebhookEvent } from './webhooks.js';
export type * from './generated/operations.js';
