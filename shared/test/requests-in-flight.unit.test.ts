import { request } from 'node:http';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestsInFlight } from '../src/outbox.ts';

const requests = new RequestsInFlight();
const app = Fastify();
let release: () => void = () => undefined;
let held = new Promise<void>((resolve) => (release = resolve));
let url = '';

beforeAll(async () => {
  requests.countOn(app);
  app.post('/slow', async () => {
    await held;
    return { ok: true };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/slow`;
});
afterAll(async () => {
  release();
  await app.close();
});

const until = async (condition: () => boolean) => {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5_000) throw new Error('condition not met within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('RequestsInFlight', () => {
  it('counts each request from its arrival until it is answered, and one whose client gave up until its connection closed', async () => {
    const answered = [fetch(url, { method: 'POST' }), fetch(url, { method: 'POST' })];
    await until(() => requests.count === 2);
    const abandoned = request(url, { method: 'POST' });
    abandoned.on('error', () => undefined);
    abandoned.end();
    await until(() => requests.count === 3);
    abandoned.destroy();
    await until(() => requests.count === 2);
    release();
    await Promise.all(answered.map(async (answer) => expect((await answer).status).toBe(200)));
    await until(() => requests.count === 0);
    held = Promise.resolve();
    expect((await fetch(url, { method: 'POST' })).status).toBe(200);
    await until(() => requests.count === 0);
  });
});
