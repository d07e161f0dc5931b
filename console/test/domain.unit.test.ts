import { describe, expect, it } from 'vitest';
import type { ApiKey } from '../src/api.ts';
import { ALL_SCOPES, allowedFromText, eventDetailText, canRevoke, canRoll, cidrLines, createKeyRequest, permissionsText, createWebhookRequest, deliveryResult, durationText, earliestExpiryDate, eventTypesText, formatRelative, keyName, passwordProblem, retryAfterText, tokenFromFragment } from '../src/domain.ts';

const NOW = new Date('2026-11-23T10:00:00.000Z');

describe('set-password rules', () => {
  it('asks for at least 12 characters', () => {
    expect(passwordProblem('a'.repeat(11))).toBe('Use at least 12 characters.');
    expect(passwordProblem('a'.repeat(12))).toBeUndefined();
  });

  it('reads the token from the fragment only', () => {
    expect(tokenFromFragment('#token=abc_DEF-123')).toBe('abc_DEF-123');
    expect(tokenFromFragment('#token=')).toBeUndefined();
    expect(tokenFromFragment('')).toBeUndefined();
    expect(tokenFromFragment('#other=1')).toBeUndefined();
  });
});

describe('the create-key form', () => {
  const form = { label: '  market maker  ', expires: 'never' as const, expiresOn: '' };

  it('trims the label and sends the expiry choice', () => {
    expect(createKeyRequest(form, NOW)).toEqual({ ok: true, value: { label: 'market maker', expires: 'never' } });
    expect(createKeyRequest({ ...form, expires: '90d' }, NOW)).toEqual({ ok: true, value: { label: 'market maker', expires: '90d' } });
  });

  it('needs a label of at most 100 characters', () => {
    expect(createKeyRequest({ ...form, label: '   ' }, NOW)).toMatchObject({ ok: false, field: 'label' });
    expect(createKeyRequest({ ...form, label: 'x'.repeat(101) }, NOW)).toMatchObject({ ok: false, field: 'label' });
    expect(createKeyRequest({ ...form, label: 'x'.repeat(100) }, NOW)).toMatchObject({ ok: true });
  });

  it('takes today (UTC) or a later date, and only with "A date"', () => {
    expect(earliestExpiryDate(NOW)).toBe('2026-11-23');
    expect(earliestExpiryDate(new Date('2026-11-23T23:59:59.999Z'))).toBe('2026-11-23');
    expect(createKeyRequest({ ...form, expires: 'date', expiresOn: '' }, NOW)).toMatchObject({ ok: false, field: 'expiresOn' });
    expect(createKeyRequest({ ...form, expires: 'date', expiresOn: '2026-11-22' }, NOW)).toMatchObject({ ok: false, field: 'expiresOn' });
    expect(createKeyRequest({ ...form, expires: 'date', expiresOn: '2026-11-23' }, NOW)).toEqual({
      ok: true,
      value: { label: 'market maker', expires: 'date', expiresOn: '2026-11-23' },
    });
    expect(createKeyRequest({ ...form, expires: '30d', expiresOn: '2020-01-01' }, NOW)).toEqual({ ok: true, value: { label: 'market maker', expires: '30d' } });
  });
});

describe('what a key offers', () => {
  it('is named by its label, or by its prefix when it has none', () => {
    expect(keyName({ label: 'ci-bot', displayPrefix: 'svc_live_Ab3x…9fQe' })).toBe('“ci-bot”');
    expect(keyName({ label: null, displayPrefix: 'svc_live_Ab3x…9fQe' })).toBe('svc_live_Ab3x…9fQe');
  });

  const key = (status: ApiKey['status']) => ({ status }) as ApiKey;

  it('rolls only a key in normal service and revokes any key that still works', () => {
    expect([key('Active'), key('Expiring'), key('Expired'), key('Revoked')].map(canRoll)).toEqual([true, false, false, false]);
    expect([key('Active'), key('Expiring'), key('Expired'), key('Revoked')].map(canRevoke)).toEqual([true, true, false, false]);
  });
});

describe('wording', () => {
  const now = Date.parse('2026-11-23T10:00:00.000Z');

  it('says how far a moment is in its largest whole unit', () => {
    expect(formatRelative('2026-11-23T11:00:00.000Z', now, 'en')).toBe('in 1 hour');
    expect(formatRelative('2026-11-23T09:57:00.000Z', now, 'en')).toBe('3 minutes ago');
    expect(formatRelative('2026-11-30T10:00:00.000Z', now, 'en')).toBe('in 7 days');
    expect(formatRelative('2026-11-23T09:59:30.000Z', now, 'en')).toBe('just now');
  });

  it('turns Retry-After into words', () => {
    expect(retryAfterText(undefined)).toBe('');
    expect(retryAfterText(30)).toBe(' Try again in 30 seconds.');
    expect(retryAfterText(61)).toBe(' Try again in 2 minutes.');
    expect(retryAfterText(60)).toBe(' Try again in 1 minute.');
  });
});

describe('webhooks wording and form', () => {
  it('says what an endpoint receives and how a delivery went', () => {
    expect(eventTypesText([])).toBe('All events');
    expect(eventTypesText(['strategy.created', 'fill.recorded'])).toBe('strategy.created, fill.recorded');
    expect(deliveryResult({ statusCode: 200, failure: null, succeeded: true })).toBe('200');
    expect(deliveryResult({ statusCode: 500, failure: null, succeeded: false })).toBe('500');
    expect(deliveryResult({ statusCode: 302, failure: 'redirect not followed', succeeded: false })).toBe('302 · redirect not followed');
    expect(deliveryResult({ statusCode: null, failure: 'timeout', succeeded: false })).toBe('timeout');
    expect(durationText(31)).toBe('31 ms');
    expect(durationText(1234)).toBe('1.23 s');
    expect(durationText(10_000)).toBe('10.0 s');
  });

  it('checks the create-endpoint form before sending it', () => {
    expect(createWebhookRequest({ url: ' ', eventTypes: [], description: '' })).toMatchObject({ ok: false, field: 'url' });
    expect(createWebhookRequest({ url: 'example.com/hooks', eventTypes: [], description: '' })).toMatchObject({ ok: false, field: 'url' });
    expect(createWebhookRequest({ url: 'https://x.example/h', eventTypes: [], description: 'd'.repeat(501) })).toMatchObject({ ok: false, field: 'description' });
    expect(createWebhookRequest({ url: ' https://x.example/h ', eventTypes: ['fill.recorded'], description: ' desk ' })).toEqual({
      ok: true,
      value: { url: 'https://x.example/h', eventTypes: ['fill.recorded'], description: 'desk' },
    });
  });
});

describe('key permissions', () => {
  it('the create form sends the checked scopes in the server\'s order and one CIDR per line', () => {
    const form = { label: 'reporting', expires: 'never' as const, expiresOn: '', scopes: ['fills:write', 'read'], allowedCidrs: ' 127.0.0.1 \n\n2001:db8::/32\n' };
    expect(createKeyRequest(form, NOW)).toEqual({
      ok: true,
      value: { label: 'reporting', expires: 'never', scopes: ['read', 'fills:write'], allowedCidrs: ['127.0.0.1', '2001:db8::/32'] },
    });
    expect(createKeyRequest({ ...form, scopes: [] }, NOW)).toMatchObject({ ok: false, field: 'scopes' });
    expect(cidrLines('')).toEqual([]);
  });

  it('the table says "Full access" and "Anywhere", or the list', () => {
    expect(permissionsText(['read', 'orders:write', 'fills:write', 'strategies:write', 'webhooks:write'])).toBe('Full access');
    expect(permissionsText(['orders:write', 'read'])).toBe('Read, Orders');
    expect(allowedFromText([])).toBe('Anywhere');
    expect(allowedFromText(['10.0.0.0/8', '::1/128'])).toBe('10.0.0.0/8, ::1/128');
  });

  it('the security log says what an entry changed, and where a refused request came from', () => {
    const entry = { clientAddress: '203.0.113.9', detail: null };
    const updated = (detail: Record<string, unknown>) => eventDetailText({ ...entry, type: 'key.updated', detail });
    expect(updated({ scopes: ['read'], previousScopes: ['read', 'orders:write'], allowedCidrs: ['10.0.0.0/8'], previousAllowedCidrs: [] })).toBe(
      'Permissions: Read, Orders → Read; Allowed from: Anywhere → 10.0.0.0/8',
    );
    expect(updated({ scopes: ['read'], previousScopes: ['read'], allowedCidrs: [], previousAllowedCidrs: ['::1/128'] })).toBe('Allowed from: ::1/128 → Anywhere');
    expect(updated({ scopes: ['read'], previousScopes: ['read'], allowedCidrs: [], previousAllowedCidrs: [] })).toBe('Nothing changed');
    expect(eventDetailText({ ...entry, type: 'key.created', detail: { scopes: ALL_SCOPES, allowedCidrs: [] } })).toBe('Permissions: Full access; Allowed from: Anywhere');
    expect(eventDetailText({ ...entry, type: 'key.rolled', detail: { replacedByDisplayPrefix: 'svc_live_abcd…wxyz' } })).toBe('Replaced by svc_live_abcd…wxyz');
    expect(eventDetailText({ ...entry, type: 'key.refused_address' })).toBe('Request from 203.0.113.9, which the key does not allow');
    expect(eventDetailText({ ...entry, type: 'key.revoked' })).toBeUndefined();
  });
});
