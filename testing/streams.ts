import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { newId } from '@ots/shared/ids';
import { INGEST_PATH } from '@ots/shared/contracts/internal-routes';
import { signIngestRequest } from '@ots/shared/outbox';
import type { Config } from '@ots/shared/config';
import type { ApiClient } from './client.ts';
import type { TestStack } from './stack.ts';

/** The gateway's stream endpoints, beside its /graphql URL. */
export function streamUrls(graphqlUrl: string): { sse: string; ws: string } {
  return { sse: `${graphqlUrl}/stream`, ws: `${graphqlUrl.replace(/^http/, 'ws')}/ws` };
}

/** The feed's end now, for a stream that starts from it. */
export async function feedEndCursor(client: Pick<ApiClient, 'listEvents'>): Promise<string> {
  let after: string | null = null;
  for (;;) {
    const page = await client.listEvents({ first: 200, after });
    after = page.pageInfo.endCursor!;
    if (!page.pageInfo.hasNextPage) return after;
  }
}

/** How many stream places the key holds, counted across every gateway in Redis: a stream is registered once it holds one. */
export async function openStreamPlaces(stack: TestStack, apiKeyId: string): Promise<number> {
  const redis = new Redis(inject('redisUrl'));
  try {
    return await redis.zcard(`${stack.config.redisKeyPrefix}streams:${apiKeyId}`);
  } finally {
    redis.disconnect();
  }
}

export const EVENTS_SUBSCRIPTION = `subscription ($after: String, $filter: EventFilter) {
  events(after: $after, filter: $filter) { cursor event { id type occurredAt data } }
}`;

export interface StreamedEvent {
  cursor: string;
  event: { id: string; type: string; occurredAt: string; data: Record<string, unknown> };
}

/**
 * Adds `count` strategy.created events of the account straight through the events service's
 * ingest route, as the producers' relays do, in batches of up to 1,000: a burst larger than the
 * API's rate limit would let a test write.
 */
export async function ingestEvents(config: Config, accountId: string, count: number, label = 'burst'): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 1000) {
    const events = Array.from({ length: Math.min(1000, count - start) }, (_, index) => {
      const occurredAt = new Date();
      const id = newId(occurredAt.getTime());
      ids.push(id);
      return {
        id,
        accountId,
        type: 'strategy.created',
        occurredAt: occurredAt.toISOString(),
        data: { id: randomUUID(), name: `${label} ${start + index}`, description: null, status: 'ACTIVE' },
      };
    });
    const body = JSON.stringify({ events });
    const response = await fetch(new URL(INGEST_PATH, config.subgraphUrls.events), { method: 'POST', headers: signIngestRequest(config.eventsIngestSecret!, body), body });
    if (!response.ok) throw new Error(`ingest answered ${response.status}: ${await response.text()}`);
  }
  return ids;
}

/** One event of an SSE stream as sent: its id line, event name and data. */
export interface SseMessage {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/**
 * A bare SSE reader (what a browser's EventSource or a curl sees), for what the protocol client
 * hides: the id lines, Last-Event-ID, comment heartbeats and statuses before the stream opens.
 */
export class RawSseStream {
  readonly messages: SseMessage[] = [];
  comments = 0;
  status = 0;
  headers: Headers | undefined;
  body = '';
  done: Promise<void> = Promise.resolve();
  private readonly abort = new AbortController();
  private waiters: (() => void)[] = [];

  async open(url: string, apiKey: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<this> {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': apiKey, ...headers },
      body: JSON.stringify({ query, variables }),
      signal: this.abort.signal,
    });
    this.status = response.status;
    this.headers = response.headers;
    if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
      this.body = await response.text();
      return this;
    }
    this.done = this.read(response.body!).catch(() => undefined);
    return this;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const message: SseMessage = { id: undefined, event: undefined, data: '' };
        let isComment = true;
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          isComment = false;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') message.id = value;
          if (field === 'event') message.event = value;
          if (field === 'data') message.data += value;
        }
        if (isComment) this.comments += 1;
        else this.messages.push(message);
        for (const wake of this.waiters.splice(0)) wake();
      }
    }
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** The `next` payloads received so far. */
  get items(): { data?: { events: StreamedEvent } | null; errors?: { message: string; extensions?: Record<string, unknown> }[] }[] {
    return this.messages.filter((message) => message.event === 'next').map((message) => JSON.parse(message.data));
  }

  async waitFor(predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting on the stream (${this.messages.length} messages so far)`);
      await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), new Promise((resolve) => setTimeout(resolve, 100))]);
    }
  }

  close(): void {
    this.abort.abort();
  }
}
