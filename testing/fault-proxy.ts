import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface ForwardedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * An HTTP relay in front of the gateway that loses what a test tells it to, as a flaky network does:
 * `dropNextResponses` lets the gateway answer and then cuts the client's connection instead of passing
 * the answer on (the request ran; the client never learns how), and `dropStreams` cuts every open
 * streaming response mid-way. Every request and status it relays is recorded.
 */
export class FaultProxy {
  private server: Server | undefined;
  private readonly streams = new Set<ServerResponse>();
  private drops: { count: number; when: (request: ForwardedRequest) => boolean } = { count: 0, when: () => true };
  readonly requests: ForwardedRequest[] = [];
  readonly statuses: number[] = [];
  droppedResponses = 0;

  constructor(private readonly target: URL) {}

  get origin(): string {
    const address = this.server!.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** Loses the answers of the next `count` requests that `when` picks (all requests by default). */
  dropNextResponses(count: number, when: (request: ForwardedRequest) => boolean = () => true): void {
    this.drops = { count, when };
  }

  /** Cuts every streaming response open now; the client sees its connection end. */
  dropStreams(): void {
    for (const response of this.streams) response.socket?.destroy();
    this.streams.clear();
  }

  async start(): Promise<this> {
    this.server = createServer((request, response) => void this.relay(request, response));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    this.dropStreams();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async relay(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const forwarded: ForwardedRequest = { method: incoming.method ?? 'GET', path: incoming.url ?? '/', headers: incoming.headers, body: body.toString('utf8') };
    this.requests.push(forwarded);
    const drop = this.drops.count > 0 && this.drops.when(forwarded);
    if (drop) this.drops.count -= 1;

    const upstream = httpRequest(
      { host: this.target.hostname, port: this.target.port, method: forwarded.method, path: forwarded.path, headers: { ...incoming.headers, host: this.target.host } },
      (answer) => {
        this.statuses.push(answer.statusCode ?? 0);
        const streaming = String(answer.headers['content-type'] ?? '').startsWith('text/event-stream');
        if (drop) {
          // Read the whole answer, so the gateway finishes the request, then lose it.
          answer.resume();
          answer.on('end', () => {
            this.droppedResponses += 1;
            incoming.socket.destroy();
          });
          return;
        }
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        if (streaming) {
          this.streams.add(outgoing);
          outgoing.on('close', () => {
            this.streams.delete(outgoing);
            answer.destroy();
          });
        }
        answer.pipe(outgoing);
      },
    );
    upstream.on('error', () => outgoing.socket?.destroy());
    outgoing.on('close', () => upstream.destroy());
    upstream.end(body);
  }
}
