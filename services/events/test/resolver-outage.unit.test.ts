import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import type { EventsDb } from '../src/repository.ts';

// The resolver's own failure, as getaddrinfo reports one it may recover from.
vi.mock('node:dns', async (actual) => ({
  ...(await actual<typeof import('node:dns')>()),
  lookup: (_host: string, _options: unknown, callback: (error: NodeJS.ErrnoException) => void) =>
    callback(Object.assign(new Error('getaddrinfo EAI_AGAIN hooks.example.com'), { code: 'EAI_AGAIN' })),
}));

const { createEndpoint } = await import('../src/operations.ts');

describe('saving a webhook endpoint in production while the resolver cannot answer', () => {
  it('is TEMPORARILY_UNAVAILABLE, not a refusal of the URL: the client may retry', async () => {
    // Nothing is stored when the URL is not settled, so no database is reached.
    const scope = { db: {} as EventsDb, accountId: randomUUID(), production: true, secretKey: randomBytes(32), now: () => new Date() };
    const created = await createEndpoint(scope as never, { url: 'https://hooks.example.com/x' });
    expect(created).toMatchObject({ ok: false, error: { code: 'TEMPORARILY_UNAVAILABLE', field: null } });
  });
});
