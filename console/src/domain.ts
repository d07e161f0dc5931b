import type { ApiKey, CreateKeyInput, CreateWebhookInput, ExpiryChoice, GraceChoice, KeyStatus, LogEventType } from './api.ts';

/** The console's rules and wording, as plain functions (tested in console/test/domain.unit.test.ts). */

export const MIN_PASSWORD_LENGTH = 12;
const MAX_LABEL_LENGTH = 100;

export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `Use at least ${MIN_PASSWORD_LENGTH} characters.`;
  return undefined;
}

/** The one-time token of a set-password link, `/set-password#token=…` (a fragment never reaches a server). */
export function tokenFromFragment(hash: string): string | undefined {
  const token = new URLSearchParams(hash.replace(/^#/, '')).get('token');
  return token ? token : undefined;
}

export const EXPIRY_CHOICES: { value: ExpiryChoice; label: string }[] = [
  { value: 'never', label: 'Never' },
  { value: '30d', label: '30 days' },
  { value: '90d', label: '90 days' },
  { value: 'date', label: 'A date' },
];

export const GRACE_CHOICES: { value: GraceChoice; label: string }[] = [
  { value: 'now', label: 'Now' },
  { value: '1h', label: '1 hour' },
  { value: '24h', label: '24 hours' },
  { value: '7d', label: '7 days' },
];

export const DEFAULT_GRACE: GraceChoice = '24h';

/**
 * The earliest expiry date the form offers, `YYYY-MM-DD` as `<input type="date">` reads it: today
 * in UTC, since a key given a date works through the end of that day, UTC.
 */
export function earliestExpiryDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/** How a key is named on the page: its label, or what it is when the CLI made it without one. */
export function keyName(key: { label: string | null; displayPrefix: string }): string {
  return key.label ? `“${key.label}”` : key.displayPrefix;
}

export type FormResult<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

/** The create-key form's checks, before the server's own; the request body when they pass. */
export function createKeyRequest(
  form: { label: string; expires: ExpiryChoice; expiresOn: string; scopes?: readonly string[]; allowedCidrs?: string },
  now: Date,
): FormResult<CreateKeyInput> {
  const label = form.label.trim();
  if (!label) return { ok: false, field: 'label', message: 'Give the key a label, such as the bot or job that will use it.' };
  if (label.length > MAX_LABEL_LENGTH) return { ok: false, field: 'label', message: `Use at most ${MAX_LABEL_LENGTH} characters.` };
  // Without the permission fields the server gives every scope and any address.
  const permissions =
    form.scopes === undefined && form.allowedCidrs === undefined
      ? ({ ok: true, value: {} } as const)
      : permissionsRequest({ scopes: form.scopes ?? ALL_SCOPES, allowedCidrs: form.allowedCidrs ?? '' });
  if (!permissions.ok) return permissions;
  if (form.expires !== 'date') return { ok: true, value: { label, expires: form.expires, ...permissions.value } };
  if (!/^\d{4}-\d{2}-\d{2}$/.test(form.expiresOn)) return { ok: false, field: 'expiresOn', message: 'Choose the day the key expires.' };
  if (form.expiresOn < earliestExpiryDate(now)) return { ok: false, field: 'expiresOn', message: 'Choose today or a later day.' };
  return { ok: true, value: { label, expires: 'date', expiresOn: form.expiresOn, ...permissions.value } };
}

/** Permissions can be changed while a key still works. */
export function canEdit(key: ApiKey): boolean {
  return key.status === 'Active' || key.status === 'Expiring';
}

/** Rolling makes a successor; only a key in normal service has one to make. */
export function canRoll(key: ApiKey): boolean {
  return key.status === 'Active';
}

/** Revoking also ends a rolled key's grace at once. */
export function canRevoke(key: ApiKey): boolean {
  return key.status === 'Active' || key.status === 'Expiring';
}

export const STATUS_TONE: Record<KeyStatus, 'ok' | 'warn' | 'muted' | 'danger'> = {
  Active: 'ok',
  Expiring: 'warn',
  Expired: 'muted',
  Revoked: 'danger',
};

const EVENT_LABELS: Record<LogEventType, string> = {
  'key.created': 'Key created',
  'key.rolled': 'Key rolled',
  'key.revoked': 'Key revoked',
  'sign_in.succeeded': 'Sign-in succeeded',
  'sign_in.failed': 'Sign-in failed',
  'password.set': 'Password set',
  'key.updated': 'Key permissions changed',
  'key.refused_address': 'Key refused: address not allowed',
};

/** The scopes as the form names them (contract section 5), in the server's order. */
export const SCOPE_CHOICES = [
  { scope: 'read', label: 'Read' },
  { scope: 'orders:write', label: 'Orders' },
  { scope: 'fills:write', label: 'Fills' },
  { scope: 'strategies:write', label: 'Strategies' },
  { scope: 'webhooks:write', label: 'Webhooks' },
] as const;

export const ALL_SCOPES: string[] = SCOPE_CHOICES.map((choice) => choice.scope);

/** The table's "Permissions": "Full access", or the scopes by their form names. */
export function permissionsText(scopes: readonly string[]): string {
  if (ALL_SCOPES.every((scope) => scopes.includes(scope))) return 'Full access';
  return SCOPE_CHOICES.filter((choice) => scopes.includes(choice.scope))
    .map((choice) => choice.label)
    .join(', ');
}

/** The table's "Allowed from": "Anywhere", or the CIDRs. */
export function allowedFromText(cidrs: readonly string[]): string {
  return cidrs.length === 0 ? 'Anywhere' : cidrs.join(', ');
}

/** "Allowed IP addresses" is one CIDR per line; blank lines are nothing. */
export function cidrLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The permissions part of a key form, checked before the server's own checks. */
export function permissionsRequest(form: { scopes: readonly string[]; allowedCidrs: string }): FormResult<{ scopes: string[]; allowedCidrs: string[] }> {
  if (form.scopes.length === 0) return { ok: false, field: 'scopes', message: 'Give the key at least one permission.' };
  return { ok: true, value: { scopes: ALL_SCOPES.filter((scope) => form.scopes.includes(scope)), allowedCidrs: cidrLines(form.allowedCidrs) } };
}

export function eventLabel(type: string): string {
  return EVENT_LABELS[type as LogEventType] ?? type;
}

function strings(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : undefined;
}

function change(name: string, before: string | undefined, after: string | undefined): string | undefined {
  if (after === undefined) return undefined;
  if (before === undefined) return `${name}: ${after}`;
  return before === after ? undefined : `${name}: ${before} → ${after}`;
}

/**
 * What a security log entry did, in the table's words: the permissions a key was created with,
 * what an edit changed ("Permissions: Read → Read, Orders"), the successor of a roll, and the
 * address a key was refused from. Undefined when the entry says nothing more than its label.
 */
export function eventDetailText(event: { type: string; clientAddress: string | null; detail: Record<string, unknown> | null }): string | undefined {
  const detail = event.detail ?? {};
  if (event.type === 'key.refused_address') return event.clientAddress ? `Request from ${event.clientAddress}, which the key does not allow` : undefined;
  if (typeof detail.replacedByDisplayPrefix === 'string') return `Replaced by ${detail.replacedByDisplayPrefix}`;
  const text = (list: string[] | undefined, format: (items: string[]) => string) => (list === undefined ? undefined : format(list));
  const parts = [
    change('Permissions', text(strings(detail.previousScopes), permissionsText), text(strings(detail.scopes), permissionsText)),
    change('Allowed from', text(strings(detail.previousAllowedCidrs), allowedFromText), text(strings(detail.allowedCidrs), allowedFromText)),
  ].filter((part) => part !== undefined);
  if (parts.length > 0) return parts.join('; ');
  return event.type === 'key.updated' ? 'Nothing changed' : undefined;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

export function formatDateTime(iso: string): string {
  return dateTime.format(new Date(iso));
}

const dateTimeWithSeconds = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** With seconds: attempts a few seconds apart (a retry after 5 s) must not look simultaneous. */
export function formatDateTimeWithSeconds(iso: string): string {
  return dateTimeWithSeconds.format(new Date(iso));
}

export function formatDate(iso: string): string {
  return dateOnly.format(new Date(iso));
}

const RELATIVE_UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
];

/** "in 3 hours", "5 minutes ago", "just now": how far a moment is from now, in its largest whole unit. */
export function formatRelative(iso: string, now: number, locale?: string): string {
  const delta = new Date(iso).getTime() - now;
  const format = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  for (const [unit, ms] of RELATIVE_UNITS) {
    if (Math.abs(delta) >= ms) return format.format(Math.trunc(delta / ms), unit);
  }
  return delta >= 0 ? 'in less than a minute' : 'just now';
}

export function retryAfterText(seconds: number | undefined): string {
  if (!seconds) return '';
  if (seconds < 60) return ` Try again in ${seconds} seconds.`;
  const minutes = Math.ceil(seconds / 60);
  return ` Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/** What an endpoint is sent: every type when the list is empty. */
export function eventTypesText(eventTypes: string[]): string {
  return eventTypes.length === 0 ? 'All events' : eventTypes.join(', ');
}

/** A delivery attempt's outcome as the page lists it: the receiver's status code, or why no good answer came. */
export function deliveryResult(delivery: { statusCode: number | null; failure: string | null; succeeded: boolean }): string {
  if (delivery.statusCode !== null) return delivery.failure ? `${delivery.statusCode} · ${delivery.failure}` : String(delivery.statusCode);
  return delivery.failure ?? 'Failed';
}

export function durationText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

export const SECRET_GRACE_CHOICES: { value: GraceChoice; label: string }[] = [
  { value: 'now', label: 'Now' },
  { value: '1h', label: '1 hour' },
  { value: '24h', label: '24 hours' },
  { value: '7d', label: '7 days' },
];

/** The create-endpoint form, checked before it is sent (the events service checks it again). */
export function createWebhookRequest(form: { url: string; eventTypes: string[]; description: string }): FormResult<CreateWebhookInput> {
  const url = form.url.trim();
  if (!url) return { ok: false, field: 'url', message: 'Enter the URL that will receive the webhooks.' };
  if (!/^https?:\/\/[^\s]+$/i.test(url)) return { ok: false, field: 'url', message: 'Enter a URL that starts with https://.' };
  if (form.description.length > 500) return { ok: false, field: 'description', message: 'Use at most 500 characters.' };
  return { ok: true, value: { url, eventTypes: form.eventTypes, description: form.description.trim() } };
}
