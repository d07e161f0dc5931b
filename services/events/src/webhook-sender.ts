import http from 'node:http';
import https from 'node:https';
import { checkLiteralAddress, guardedLookup } from './url-policy.ts';

/** At most this much of a receiver's answer is read; the rest is dropped with the connection. */

const INTERRUPTED = 'interrupted: the events service stopped during the attempt';

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  production: boolean;
  timeoutMs: number;
  /** Aborted when the service stops: the attempt ends at once, as `interrupted`. */
  signal?: AbortSignal;
  /** Name servers for the endpoint's name instead of the system's (url-policy.ts `ResolveOptions`). */
  dnsServers?: readonly string[];
}

export interface WebhookAnswer {
  statusCode: number | null;
  /** Why there is no 2xx: a transport failure, a timeout, a redirect; null on success or a plain non-2xx. */
  failure: string | null;
  succeeded: boolean;
  durationMs: number;
  /** Cut short by a stop of this service, not by the receiver. */
  interrupted?: boolean;
}

/**
 * One POST, on node:http rather than fetch, for the controls a dispatcher facing arbitrary
 * receivers needs: the socket's DNS look-up goes through the SSRF guard (so the connection is made
 * to the address that was checked), redirects are never followed (a 3xx is a failed attempt), one
 * deadline covers connecting, sending and the answer's status, and the answer's body is never read:
 * the status decides, so a receiver that answers 2xx at once and keeps its body open (or streams one)
 * has its delivery recorded then, not timed out and sent again. A fresh connection each time
 * (`agent: false`): a pooled socket would skip the check.
 */
export function postWebhook(request: WebhookRequest): Promise<WebhookAnswer> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    let deadline: NodeJS.Timeout | undefined;
    let onSettled: (() => void) | undefined;
    // Ends the DNS look-up with the attempt: destroying the socket would leave it running.
    const ended = new AbortController();
    const finish = (answer: Omit<WebhookAnswer, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      ended.abort();
      onSettled?.();
      resolve({ ...answer, durationMs: elapsed() });
    };
    const failed = (failure: string) => finish({ statusCode: null, failure, succeeded: false });
    if (request.signal?.aborted) {
      finish({ statusCode: null, failure: INTERRUPTED, succeeded: false, interrupted: true });
      return;
    }

    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      failed('the endpoint URL does not parse');
      return;
    }
    const client = url.protocol === 'https:' ? https : url.protocol === 'http:' && !request.production ? http : undefined;
    if (!client) {
      failed(`scheme not allowed: ${url.protocol}`);
      return;
    }
    // Node does not look an IP literal up, so the guard in `lookup` never sees it.
    const literal = request.production ? checkLiteralAddress(url.hostname) : undefined;
    if (literal) {
      failed(`address not allowed: ${literal}`);
      return;
    }

    const outgoing = client.request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
      agent: false,
      lookup: guardedLookup(request.production, { signal: ended.signal, servers: request.dnsServers }),
    });
    deadline = setTimeout(() => {
      outgoing.destroy();
      failed(`no answer within ${request.timeoutMs / 1000} s`);
    }, request.timeoutMs);

    const interrupt = () => {
      finish({ statusCode: null, failure: INTERRUPTED, succeeded: false, interrupted: true });
      outgoing.destroy();
    };
    request.signal?.addEventListener('abort', interrupt, { once: true });
    onSettled = () => request.signal?.removeEventListener('abort', interrupt);
    outgoing.on('error', (error: NodeJS.ErrnoException) => failed(describeError(error)));
    outgoing.on('response', (response) => {
      const status = response.statusCode ?? 0;
      response.destroy();
      if (status >= 200 && status < 300) finish({ statusCode: status, failure: null, succeeded: true });
      else if (status >= 300 && status < 400) finish({ statusCode: status, failure: 'redirect not followed', succeeded: false });
      else finish({ statusCode: status, failure: null, succeeded: false });
    });
    outgoing.end(request.body);
  });
}

function describeError(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'EADDRNOTALLOWED':
      return `address not allowed: ${error.message}`;
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset by the receiver';
    case 'ENOTFOUND':
      return 'the host name does not resolve';
    case 'EAI_AGAIN':
      return 'DNS did not answer for the host name';
    case 'ETIMEDOUT':
      return 'connection timed out';
    default:
      // TLS and other socket errors: their messages name what failed, not our internals.
      return error.code ? `${error.code}: ${error.message}` : error.message;
  }
}
