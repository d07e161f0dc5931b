import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  headers: Record<string, string>;
  body: string;
  /** The payload as the Standard Webhooks verifier returned it, or undefined when verification failed. */
  verified: unknown;
  receivedAt: number;
}

/**
 * How the receiver answers one request: a status, 'hang' (never answer: the sender's deadline must
 * end it) or 'endless' (200, then a body that never ends).
 */
export type Answer = number | 'hang' | 'endless' | 'unfinished';

/**
 * A webhook receiver as a client would write one: a real HTTP server that checks every request with
 * the standardwebhooks package's verifier under the endpoint's secret(s), and answers as scripted.
 */
export class Receiver {
  readonly received: ReceivedWebhook[] = [];
  private server: Server | undefined;
  private readonly script: Answer[] = [];
  private readonly waiters: (() => void)[] = [];
  private readonly hanging = new Set<ServerResponse>();
  secrets: string[] = [];
  /** Answer when the script is empty. */
  defaultAnswer: Answer = 200;

  get url(): string {
    const address = this.server!.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`;
  }

  /** Answers the next requests with these, in order. */
  answerNext(...answers: Answer[]): void {
    this.script.push(...answers);
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => void this.handle(request, response));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    let verified: unknown;
    for (const secret of this.secrets) {
      try {
        verified = new Webhook(secret).verify(body, headers);
        break;
      } catch {
        // Try the next secret; a request no secret verifies stays unverified.
      }
    }
    this.received.push({ headers, body, verified, receivedAt: performance.now() });
    for (const wake of this.waiters.splice(0)) wake();
    const answer = this.script.shift() ?? this.defaultAnswer;
    if (answer === 'hang') {
      this.hanging.add(response);
      return;
    }
    if (answer === 'unfinished') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write('ok');
      this.hanging.add(response);
      return;
    }
    if (answer === 'endless') {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
      };
      response.on('drain', pump);
      this.hanging.add(response);
      pump();
      return;
    }
    response.writeHead(answer, { 'content-type': 'text/plain', ...(answer >= 300 && answer < 400 ? { location: 'http://127.0.0.1:1/elsewhere' } : {}) });
    response.end(answer < 300 ? 'ok' : 'no');
  }

  /** Resolves once `count` requests have arrived in all, or fails after `timeoutMs`. */
  async waitFor(count: number, timeoutMs = 20_000): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} webhooks, received ${this.received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
