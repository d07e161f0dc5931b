import http from 'node:http';
import type net from 'node:net';

/**
 * An HTTP load balancer for tests: each request goes to the next backend in turn, on a connection
 * of its own (no keep-alive), as a Kubernetes Service or a compose network spreads requests over
 * replicas. A backend that refuses the connection (a killed replica) is skipped: the request never
 * reached it, so sending it to the next one is safe. Any later failure is the client's 502, as
 * from a real balancer, because the backend may have acted on the request.
 */
export class RoundRobinProxy {
  private server: http.Server | undefined;
  private next = 0;
  port = 0;

  constructor(readonly backends: { host: string; port: number }[]) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => this.forward(request, Buffer.concat(chunks), response, this.backends.length));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  private forward(request: http.IncomingMessage, body: Buffer, response: http.ServerResponse, triesLeft: number) {
    const backend = this.backends[this.next++ % this.backends.length]!;
    const upstream = http.request(
      { host: backend.host, port: backend.port, method: request.method, path: request.url, headers: request.headers, agent: false },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
        response.on('close', () => answer.destroy());
      },
    );
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED' && triesLeft > 1) return this.forward(request, body, response, triesLeft - 1);
      if (!response.headersSent) response.writeHead(502).end();
      else response.destroy();
    });
    upstream.end(body);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
