import { EventEmitter } from 'node:events';
import { Agent, request } from 'undici';

/**
 * HTTP between the services: the gateway's fetches from the subgraphs, the calls one subgraph makes
 * to another, and the outbox relays' posts to the events service. undici's `request` over one
 * keep-alive pool per process, not `fetch`: fetch builds a WHATWG Request, Response, body stream
 * and AbortSignal for every call, several times the CPU of `request` (the orders README,
 * Performance, has the figures), and every request crosses at least one such call.
 */
const pool = new Agent({ keepAliveTimeout: 10_000 });

export interface JsonPost {
  url: string | URL;
  body: string;
  headers: Record<string, string>;
  /** The whole call's deadline: no answer by then is a failure, however far it got. */
  timeoutMs: number;
}

/** An answer, its body read whole. */
export interface HttpAnswer {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Failures that happen before a connection exists, so before any byte of the request was written:
 * the other side cannot have acted on it. A reset, a close or the deadline may come after the
 * request arrived (the deadline counts so even while connecting: undici does not say how far it got).
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/** The call did not complete: refused, reset, or past its deadline (`timedOut`). */
export class HttpCallError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
    /** The request never left this process (no connection could be made), so nothing of it ran. */
    readonly notSent = false,
  ) {
    super(message);
  }
}

/**
 * POSTs a JSON body and reads the answer whole. The deadline aborts through an EventEmitter, which
 * undici accepts as a signal: an AbortSignal per call is part of what makes fetch dear.
 */
export async function postJson(post: JsonPost): Promise<HttpAnswer> {
  const abort = new EventEmitter();
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    abort.emit('abort');
  }, post.timeoutMs);
  try {
    const answer = await request(post.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...post.headers },
      body: post.body,
      dispatcher: pool,
      signal: abort,
    });
    return { status: answer.statusCode, headers: answer.headers, body: await answer.body.text() };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new HttpCallError(timedOut ? `no answer within ${post.timeoutMs} ms` : (error as Error).message, timedOut, !timedOut && NOT_SENT_CODES.has(String(code)));
  } finally {
    clearTimeout(deadline);
  }
}
