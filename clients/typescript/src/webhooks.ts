import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { OtsRequestError } from './errors.js';
import type { EventFieldsFragment } from './generated/operations.js';

/** A webhook delivery's body: the event as `listEvents` shows it. */
export type WebhookEvent = EventFieldsFragment;

/**
 * Verifies a webhook delivery with the endpoint's signing secret (`whsec_...`), by the Standard
 * Webhooks rules: the signature over `webhook-id`, `webhook-timestamp` and the raw body, and a
 * timestamp within five minutes. Returns the parsed event; throws `OtsRequestError` otherwise.
 * Pass the body exactly as received (the raw text, not re-serialised JSON). During a secret's
 * rotation grace, try the new secret and then the old one.
 */
export function verifyWebhook(secret: string, body: string, headers: Record<string, string | string[] | undefined> | Headers): WebhookEvent {
  const plain: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) {
    if (value !== undefined) plain[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  try {
    return new Webhook(secret).verify(body, plain) as WebhookEvent;
  } catch (error) {
    const message = error instanceof WebhookVerificationError ? error.message : 'The webhook could not be verified';
    throw new OtsRequestError(`Webhook verification failed: ${message}`, { code: 'WEBHOOK_VERIFICATION_FAILED', cause: error });
  }
}
