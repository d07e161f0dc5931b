import type { IncomingMessage, ServerOptions } from 'node:http';
import type { Limits } from './config.ts';

/**
 * Contract section 8: the rest of a refused body is read and discarded up to this much, or for this
 * long, before the connection closes.
 */
const DISCARD_LIMIT = { bytes: 10 * 1024 * 1024, ms: 5_000 };

/**
 * Node's own header and request timeouts, checked often enough that a connection is closed close to
 * its deadline (Node checks every 30 s by default, which would double the body timeout).
 */
export function serverTimeouts(limits: Pick<Limits, 'headersTimeoutMs' | 'bodyTimeoutMs'>): ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.bodyTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(limits.headersTimeoutMs / 10))),
  };
}

/**
 * Reads and discards what is left of a request body the server will not use. A client such as Node's
 * fetch writes its whole body before it reads the answer: closing on it while it still writes makes
 * it see a broken pipe instead of the status, so the answer waits until the body is in, within
 * DISCARD_LIMIT (as nginx's lingering close does); past that the connection is closed anyway.
 */
export function discardRestOfBody(request: IncomingMessage, limit = DISCARD_LIMIT): Promise<void> {
  if (request.complete || request.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let received = 0;
    const finish = () => {
      clearTimeout(timer);
      request.off('data', count);
      request.off('end', finish);
      request.off('close', finish);
      resolve();
    };
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit.bytes) finish();
    };
    const timer = setTimeout(finish, limit.ms);
    request.on('data', count);
    request.once('end', finish);
    request.once('close', finish);
    request.resume();
  });
}
