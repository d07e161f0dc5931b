import net from 'node:net';
import { expect } from 'vitest';
import type { TestStack } from './stack.ts';

/** One client of the API: an account and one of its keys, as `createAccountWithKey` returns them. */
export interface Client {
  accountId: string;
  apiKeyId: string;
  apiKey: string;
}

/** For files that send bursts far above the per-key rate limit, which they do not test. */
export const NO_RATE_LIMIT_ENV = { RATE_LIMIT_PER_SECOND: '100000', RATE_LIMIT_BURST: '100000' };

/** Sends through the gateway and returns `data`, failing the test on any top-level error. */
export async function data(stack: TestStack, client: Pick<Client, 'apiKey'>, query: string, variables?: Record<string, unknown>) {
  const result = await stack.graphql(client.apiKey, query, variables);
  expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
  expect(result.status).toBe(200);
  return result.body.data;
}

/** The first top-level error a request fails with. */
export async function topLevelError(stack: TestStack, client: Pick<Client, 'apiKey'>, query: string, variables?: Record<string, unknown>) {
  const result = await stack.graphql(client.apiKey, query, variables);
  expect(result.body.errors?.length, JSON.stringify(result.body)).toBeGreaterThan(0);
  return result.body.errors[0] as { message: string; path?: string[]; extensions: { code: string; argumentName?: string } };
}

/**
 * A POST written on a socket of its own, for header values fetch refuses to send but any client
 * may: each character up to U+00FF goes as that one byte (latin-1), as the server reads it, so C1
 * controls such as CSI U+009B and OSC U+009D arrive as sent. Answers the status.
 */
export function postWithRawHeaders(url: string, body: string, headers: Record<string, string>): Promise<number> {
  const { hostname, port, pathname } = new URL(url);
  const lines = [`POST ${pathname} HTTP/1.1`, `host: ${hostname}:${port}`, 'connection: close', 'content-type: application/json', `content-length: ${Buffer.byteLength(body)}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
    // Written, not ended: a client that half-closes is dropped before the answer (`connection: close` ends it).
    socket.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), Buffer.from(body)]));
  });
}

/**
 * How long after `since` a change took effect on every one of `urls` (gateways), by the send time of
 * the first probe each answered as `check` expects; Infinity when one has not within `limitMs`.
 * Probes go out every 50 ms without waiting for the one before: on a loaded machine a slow answer
 * would otherwise hold back the next probe, and the measure would be the probes' queue, not the
 * system's time.
 */
export async function msUntilEvery(urls: string[], check: (url: string) => Promise<boolean>, since: number, limitMs = 3_000): Promise<number> {
  const seenAt = new Map<string, number>();
  const probes: Promise<void>[] = [];
  while (seenAt.size < urls.length && Date.now() - since < limitMs) {
    for (const url of urls.filter((candidate) => !seenAt.has(candidate))) {
      const sentAt = Date.now() - since;
      probes.push(
        check(url).then(
          (seen) => {
            if (seen) seenAt.set(url, Math.min(seenAt.get(url) ?? sentAt, sentAt));
          },
          // A probe that failed (a connection refused under load) saw nothing; the next one looks again.
          () => undefined,
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await Promise.all(probes);
  return seenAt.size < urls.length ? Number.POSITIVE_INFINITY : Math.max(...seenAt.values());
}
