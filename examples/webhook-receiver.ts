/**
 * A webhook receiver: checks each delivery's signature with `verifyWebhook`, answers 401 to anything
 * unsigned or tampered with, and handles each event once (deliveries are at least once: the same
 * `webhook-id` may come again, even while its first delivery is being handled, and is answered with
 * that handling's outcome without handling it twice). The handled webhook-ids are appended to a file
 * before the 2xx answer and read at start, so a delivery again after a restart is not handled twice.
 * A sender that gives up mid-body is let go.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=8080 HANDLED_FILE=.webhook-receiver-handled node --import tsx examples/webhook-receiver.ts
 */
import { existsSync, readFileSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { verifyWebhook, type WebhookEvent } from '@ots/client';
import { isMainModule } from './main-module.ts';

export interface ReceiverOptions {
  /** The endpoint's signing secrets: the current one, and during a rotation's grace the previous one. */
  secrets: string[];
  onEvent: (event: WebhookEvent) => void | Promise<void>;
  port?: number;
  /** The file of the webhook-ids handled, one a line: read at start, appended to before each 2xx answer. */
  handledFile?: string;
}

/** The event, if one of the secrets signed the delivery. */
function verifiedEvent(secrets: string[], body: string, headers: Record<string, string>): WebhookEvent | undefined {
  for (const secret of secrets) {
    try {
      return verifyWebhook(secret, body, headers);
    } catch {
      // Try the next secret.
    }
  }
  return undefined;
}

export async function startWebhookReceiver(options: ReceiverOptions): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  // Each webhook-id's handling, under way or done: a delivery of one already started waits for its
  // outcome instead of handling it again (two may arrive together: a retry while the first is slow).
  // Those done before a restart come from the file. A crash between handling an event and appending
  // its id still handles it twice: a real receiver records the id in its database, in the same
  // transaction as what it does with the event.
  const handlings = new Map<string, Promise<void>>();
  const { handledFile } = options;
  if (handledFile && existsSync(handledFile)) {
    for (const id of readFileSync(handledFile, 'utf8').split('\n')) if (id) handlings.set(id, Promise.resolve());
  }
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of request) chunks.push(chunk as Buffer);
    } catch {
      // The sender gave up before the body ended: nobody to answer, and the service delivers it again.
      return;
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    const event = verifiedEvent(options.secrets, body, headers);
    if (!event) {
      response.writeHead(401).end();
      return;
    }
    const id = headers['webhook-id']!;
    let handling = handlings.get(id);
    if (!handling) {
      handling = (async () => {
        await options.onEvent(event);
        if (handledFile) await appendFile(handledFile, `${id}\n`);
      })();
      handlings.set(id, handling);
      // Not handled: forgotten, so that the service's next delivery tries again.
      handling.catch(() => handlings.delete(id));
    }
    try {
      await handling;
    } catch {
      // A non-2xx answer makes the service deliver it again later.
      response.writeHead(500).end();
      return;
    }
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : options.port}/webhooks`;
  return { server, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

if (isMainModule(import.meta.url)) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    console.error('usage: WEBHOOK_SECRET=whsec_... [PORT=8080] [HANDLED_FILE=.webhook-receiver-handled] webhook-receiver.ts');
    process.exit(2);
  }
  const receiver = await startWebhookReceiver({
    secrets: [secret],
    port: Number(process.env.PORT ?? 8080),
    handledFile: process.env.HANDLED_FILE ?? '.webhook-receiver-handled',
    onEvent: (event) => console.log(event.occurredAt, event.type, JSON.stringify(event.data)),
  });
  console.log(`listening on ${receiver.url} (any path on this port)`);
}
