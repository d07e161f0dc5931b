import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { EventsDb } from '../src/repository.ts';

// The resolver's own failure, as c-ares reports one it may recover from: no answer in time.
vi.mock('node:dns', async (actual) => {
  const dns = await actual<typeof import('node:dns')>();
  const unanswered = (name: string) => Promise.reject(Object.assign(new Error(`query ETIMEOUT ${name}`), { code: dns.TIMEOUT }));
  class Unanswering {
    resolve4 = unanswered;
    resolve6 = unanswered;
  }
  return { ...dns, promises: { ...dns.promises, Resolver: Unanswering } };
});

const { createEndpoint } = await import('../src/operations.ts');

describe('saving a webhook endpoint in production while the resolver cannot answer', () => {
  it('is TEMPORARILY_UNAVAILABLE, not a refusal of the URL: the client may retry', async () => {
    // Nothing is stored when the URL is not settled, so no database is reached.
    const scope = { db: {} as EventsDb, accountId: randomUUID(), production: true, secretKey: randomBytes(32), now: () => new Date() };
    const created = await createEndpoint(scope as never, { url: 'https://hooks.example.com/x' });
    expect(created).toMatchObject({ ok: false, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
  });
});
