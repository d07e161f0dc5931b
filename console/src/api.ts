/** The console's HTTP API (`/console/api/*`, same origin, session cookie); see the README. */

// The JSON shapes are the server's own types (type-only imports: no server code reaches the bundle),
// so a change on either side fails the type-check instead of a page.
import type { SecurityEventType } from '@ots/accounts/domain';
import type { securityEventView } from '@ots/accounts/operations';
import type { ExpiryChoice, GraceChoice } from '@ots/accounts/console/domain';
import type { KeyView, SessionView } from '@ots/accounts/console/operations';
import type { WebhookEndpointView } from '@ots/accounts/console/webhooks';

export type { ExpiryChoice, GraceChoice };

export type Session = SessionView;
export type ApiKey = KeyView;
export type KeyStatus = KeyView['status'];
export type LogEventType = SecurityEventType;
export type LogEvent = ReturnType<typeof securityEventView>;
export type WebhookEndpoint = WebhookEndpointView;

export interface CreateWebhookInput {
  url: string;
  /** Empty: every event type. */
  eventTypes: string[];
  description: string;
}

export interface KeyPermissionsInput {
  scopes: string[];
  /** One CIDR per entry; empty for any address. */
  allowedCidrs: string[];
}

export interface CreateKeyInput extends Partial<KeyPermissionsInput> {
  label: string;
  expires: ExpiryChoice;
  expiresOn?: string;
}

/** A refusal from the console API: `detail` is written for people and shown as it is. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly field?: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
  }
}

async function call<T>(
  onSignedOut: () => void,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  options: { signedIn?: boolean } = {},
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`/console/api${path}`, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'The console cannot reach the server. Check your connection and try again.');
  }
  if (response.status === 204) return undefined as T;
  const payload = await response.json().catch(() => undefined);
  if (response.ok) return payload as T;
  if (response.status === 401 && options.signedIn !== false) onSignedOut();
  const retryAfter = Number(response.headers.get('retry-after'));
  throw new ApiError(
    response.status,
    typeof payload?.detail === 'string' ? payload.detail : `The server answered ${response.status}. Try again.`,
    typeof payload?.field === 'string' ? payload.field : undefined,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
  );
}

/**
 * The console API's calls. `onSignedOut` runs when a signed-in request is answered 401: the session
 * ended (idle, absolute, elsewhere).
 */
export function createConsoleApi(onSignedOut: () => void) {
  const request = <T>(method: 'GET' | 'POST', path: string, body?: unknown, options?: { signedIn?: boolean }) =>
    call<T>(onSignedOut, method, path, body, options);
  return {
    session: () => request<Session>('GET', '/session', undefined, { signedIn: false }),
    signIn: (email: string, password: string) => request<Session>('POST', '/sign-in', { email, password }, { signedIn: false }),
    signOut: () => request<void>('POST', '/sign-out', {}, { signedIn: false }),
    setPassword: (token: string, password: string) => request<Session>('POST', '/set-password', { token, password }, { signedIn: false }),
    checkSetPasswordLink: (token: string) => request<void>('POST', '/set-password/check', { token }, { signedIn: false }),
    listKeys: () => request<{ keys: ApiKey[] }>('GET', '/keys'),
    createKey: (input: CreateKeyInput) => request<{ key: ApiKey; apiKey: string }>('POST', '/keys', input),
    rollKey: (id: string, grace: GraceChoice) =>
      request<{ key: ApiKey; apiKey: string; previousKey: ApiKey }>('POST', `/keys/${encodeURIComponent(id)}/roll`, { grace }),
    updateKey: (id: string, input: KeyPermissionsInput) => request<{ key: ApiKey }>('POST', `/keys/${encodeURIComponent(id)}/update`, input),
    revokeKey: (id: string) => request<{ key: ApiKey }>('POST', `/keys/${encodeURIComponent(id)}/revoke`, {}),
    securityLog: (after?: string) =>
      request<{ events: LogEvent[]; nextCursor: string | null }>('GET', `/security-log${after ? `?after=${encodeURIComponent(after)}` : ''}`),
    listWebhooks: () => request<{ endpoints: WebhookEndpoint[]; eventTypes: string[] }>('GET', '/webhooks'),
    createWebhook: (input: CreateWebhookInput) => request<{ endpoint: WebhookEndpoint; signingSecret: string }>('POST', '/webhooks', input),
    changeWebhook: (id: string, change: 'disable' | 'enable' | 'delete') =>
      request<{ endpoint: WebhookEndpoint }>('POST', `/webhooks/${encodeURIComponent(id)}/${change}`, {}),
    rotateWebhookSecret: (id: string, grace: GraceChoice) =>
      request<{ endpoint: WebhookEndpoint; signingSecret: string }>('POST', `/webhooks/${encodeURIComponent(id)}/rotate-secret`, { grace }),
  };
}

export type ConsoleApi = ReturnType<typeof createConsoleApi>;
