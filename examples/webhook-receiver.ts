/**
 * A webhook receiver: checks each delivery's signature with `verifyWebhook`, answers 401 to anything
 * unsigned or tampered with, and handles each event once (deliveries are at least once: the same
 * `webhook-id` may come again, and is answered 200 without handling it twice).
 *
 *   WEBHOOK_SECRET=whsec_... PORT=8080 node --import tsx examples/webhook-receiver.ts
 */
import { createServer, type Server } from 'node:http';
import { verifyWebhook, type WebhookEvent } from '@ots/client';

export interface ReceiverOptions {
  /** The endpoint's signing secrets: the current one, and during a rotation's grace the previous one. */
  secrets: string[];
  onEvent: (event: WebhookEvent) => void | Promise<void>;
  port?: number;
}

export async function startWebhookReceiver(options: ReceiverOptions): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  // A real receiver keeps these in its database, in the same transaction as what it does with the event.
  const handled = new Set<string>();
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    let event: WebhookEvent | undefined;
    for (const secret of options.secrets) {
      try {
        event = verifyWebhook(secret, body, headers);
        break;
      } catch {
        // Try the next secret.
      }
    }
    if (!event) {
      response.writeHead(401).end();
      return;
    }
    const id = headers['webhook-id']!;
    if (!handled.has(id)) {
      try {
        await options.onEvent(event);
      } catch {
        // Not handled: a non-2xx answer makes the service deliver it again later.
        response.writeHead(500).end();
        return;
      }
      handled.add(id);
    }
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : options.port}/webhooks`;
  return { server, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    console.error('usage: WEBHOOK_SECRET=whsec_... [PORT=8080] webhook-receiver.ts');
    process.exit(2);
  }
  const receiver = await startWebhookReceiver({
    secrets: [secret],
    port: Number(process.env.PORT ?? 8080),
    onEvent: (event) => console.log(event.occurredAt, event.type, JSON.stringify(event.data)),
  });
  console.log(`listening on ${receiver.url}`);
}
