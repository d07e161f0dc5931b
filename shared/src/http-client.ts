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

/** The call did not complete: refused, reset, or past its deadline (`timedOut`). */
export class HttpCallError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
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
    throw new HttpCallError(timedOut ? `no answer within ${post.timeoutMs} ms` : (error as Error).message, timedOut);
  } finally {
    clearTimeout(deadline);
  }
}
