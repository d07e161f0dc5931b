import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpCallError, postJson } from '../src/http-client.ts';

/** Whether a failed call's request may have reached the other side decides whether a mutation may have run. */
describe('postJson failures', () => {
  let server: Server | undefined;
  async function stop() {
    const stopping = server;
    server = undefined;
    stopping?.closeAllConnections();
    await new Promise<void>((resolve) => (stopping ? stopping.close(() => resolve()) : resolve()));
  }
  afterEach(stop);

  async function listening(handle: Parameters<typeof createServer>[1]): Promise<string> {
    server = createServer(handle);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/`;
  }

  async function failureOf(url: string, timeoutMs = 2_000): Promise<HttpCallError> {
    const error = await postJson({ url, body: '{}', headers: {}, timeoutMs }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HttpCallError);
    return error as HttpCallError;
  }

  it('says a refused connection was never sent', async () => {
    const url = await listening(() => {});
    await stop();
    expect((await failureOf(url)).notSent).toBe(true);
  });

  it('says a call that timed out or was cut after the request arrived may have been acted on', async () => {
    const silent = await failureOf(await listening(() => {}), 200);
    expect(silent).toMatchObject({ timedOut: true, notSent: false });
    await stop();
    const cut = await failureOf(await listening((request) => request.socket.destroy()));
    expect(cut).toMatchObject({ timedOut: false, notSent: false });
  });
});
