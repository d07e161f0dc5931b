import net from 'node:net';

/**
 * A TCP relay whose open connections a test can stall: from `stall()` on they pass no more bytes
 * either way, yet stay open, as a half-open connection or a wedged proxy does. Connections made after
 * it relay as usual, unless `stallNew()` has the relay take them and pass nothing on either.
 */
export class StallingRelay {
  private server: net.Server | undefined;
  private readonly connections = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private readonly held = new Set<net.Socket>();
  private stallingNew = false;
  port = 0;

  constructor(private readonly target: URL) {}

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = net.createServer((client) => {
      if (this.stallingNew) {
        this.held.add(client);
        client.on('error', () => client.destroy());
        client.on('close', () => this.held.delete(client));
        client.pause();
        return;
      }
      const upstream = net.connect(Number(this.target.port), this.target.hostname);
      const connection = { client, upstream };
      this.connections.add(connection);
      for (const socket of [client, upstream]) socket.on('error', () => socket.destroy());
      client.pipe(upstream).pipe(client);
      client.on('close', () => {
        upstream.destroy();
        this.connections.delete(connection);
      });
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** From now on, until `relayNew()`, connections are accepted and pass nothing, as through a wedged proxy. */
  stallNew(): void {
    this.stallingNew = true;
  }

  relayNew(): void {
    this.stallingNew = false;
  }

  /** Stops every open connection passing bytes, closing none. */
  stall(): void {
    for (const { client, upstream } of this.connections) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.connections) {
      client.destroy();
      upstream.destroy();
    }
    for (const client of this.held) client.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
