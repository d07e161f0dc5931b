import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import ipaddr from 'ipaddr.js';
import { resolvePublicAddresses } from '../src/url-policy.ts';
import { postWebhook } from '../src/webhook-sender.ts';
import { Receiver } from '../../../testing/webhook-receiver.ts';

/** Record types by their numbers in a DNS question. */
const TYPES: Record<number, 'A' | 'AAAA'> = { 1: 'A', 28: 'AAAA' };

/**
 * A name server on a local UDP port: it answers from `records` (NXDOMAIN for a name it has none of),
 * or, when `silent`, never. It keeps every question it was asked.
 */
class NameServer {
  readonly questions: string[] = [];
  private socket: Socket | undefined;

  constructor(
    private readonly records: Record<string, { A?: string[]; AAAA?: string[] }> = {},
    private readonly silent = false,
  ) {}

  get address(): string {
    return `127.0.0.1:${this.socket!.address().port}`;
  }

  async start(): Promise<this> {
    this.socket = createSocket('udp4', (query, from) => {
      const labels: string[] = [];
      let at = 12;
      while (query[at]! > 0) {
        labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString('ascii'));
        at += 1 + query[at]!;
      }
      const type = TYPES[query.readUInt16BE(at + 1)];
      const name = labels.join('.');
      this.questions.push(`${type} ${name}`);
      if (this.silent) return;
      const known = this.records[name];
      const answers = (type && known?.[type]) || [];
      const header = Buffer.alloc(12);
      header.writeUInt16BE(query.readUInt16BE(0), 0);
      // A response, recursion desired and available; NXDOMAIN for a name it does not know.
      header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2);
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(answers.length, 6);
      const records = answers.map((address) => {
        const data = Buffer.from(ipaddr.parse(address).toByteArray());
        const record = Buffer.alloc(12);
        // The question's name (a pointer to it), type, class IN, TTL 60 s, then the address.
        record.writeUInt16BE(0xc00c, 0);
        record.writeUInt16BE(query.readUInt16BE(at + 1), 2);
        record.writeUInt16BE(1, 4);
        record.writeUInt32BE(60, 6);
        record.writeUInt16BE(data.length, 10);
        return Buffer.concat([record, data]);
      });
      this.socket!.send(Buffer.concat([header, query.subarray(12, at + 5), ...records]), from.port, from.address);
    });
    await new Promise<void>((resolve) => this.socket!.bind(0, '127.0.0.1', resolve));
    return this;
  }

  close(): void {
    this.socket?.close();
  }
}

const closing: { close(): unknown }[] = [];
afterEach(async () => {
  for (const server of closing.splice(0)) await server.close();
});
async function running<T extends { start(): Promise<T>; close(): unknown }>(server: T): Promise<T> {
  closing.push(server);
  return server.start();
}

describe('production look-ups (c-ares, bounded, off the thread pool)', () => {
  it("32 deliveries to names whose DNS never answers hold up no other endpoint's delivery, and none outlives its deadline", async () => {
    const dns = await running(new NameServer({}, true));
    const receiver = await running(new Receiver());
    const names = Array.from({ length: 32 }, (_, index) => `hook-${index}.example`);
    const hanging = names.map((name) =>
      postWebhook({ url: `https://${name}/hooks`, headers: {}, body: '{}', production: true, timeoutMs: 1_500, dnsServers: [dns.address] }),
    );
    // Every look-up is out, waiting on the silent server: with getaddrinfo each would hold one of libuv's 4 threads.
    await expect.poll(() => new Set(dns.questions).size).toBe(2 * names.length);

    // Another endpoint's delivery meanwhile, by name: outside production that look-up is getaddrinfo, on the pool.
    // Within its own 1 s deadline, while every hanging look-up still waits: no queue behind them.
    const other = await postWebhook({ url: receiver.url.replace('127.0.0.1', 'localhost'), headers: {}, body: '{}', production: false, timeoutMs: 1_000 });
    expect(other).toMatchObject({ statusCode: 200, succeeded: true });

    const answers = await Promise.all(hanging);
    for (const answer of answers) {
      expect(answer).toMatchObject({ statusCode: null, succeeded: false, failure: 'no answer within 1.5 s' });
      // Its deadline, plus what a loaded machine's timers may lag: not the look-up's next try at 2 s and beyond.
      expect(answer.durationMs).toBeLessThan(1_500 + 1_000);
    }
    // Cancelled with their attempts: no look-up goes on asking (its next try would come at 2 s).
    const asked = dns.questions.length;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(dns.questions.length).toBe(asked);
  });

  it('a look-up on save ends at its bound as a temporary failure', async () => {
    const dns = await running(new NameServer({}, true));
    const started = performance.now();
    await expect(resolvePublicAddresses('hook.example', { signal: AbortSignal.timeout(300), servers: [dns.address] })).rejects.toMatchObject({ code: 'EAI_AGAIN' });
    expect(performance.now() - started).toBeLessThan(300 + 1_000);
  });

  it("checks every address of both families, answers exactly those, and tells a name without any", async () => {
    const dns = await running(
      new NameServer({
        'public.example': { A: ['93.184.215.14', '93.184.215.15'], AAAA: ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'] },
        'v4-only.example': { A: ['93.184.215.14'] },
        'mixed-v4.example': { A: ['93.184.215.14', '10.0.0.8'] },
        'mixed-v6.example': { A: ['93.184.215.14'], AAAA: ['::1'] },
        'mapped.example': { AAAA: ['::ffff:7f00:1'] },
      }),
    );
    const options = { signal: AbortSignal.timeout(2_000), servers: [dns.address] };
    expect(await resolvePublicAddresses('public.example', options)).toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '93.184.215.15', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ]);
    expect(await resolvePublicAddresses('v4-only.example', options)).toEqual([{ address: '93.184.215.14', family: 4 }]);
    for (const name of ['mixed-v4.example', 'mixed-v6.example', 'mapped.example']) {
      await expect(resolvePublicAddresses(name, options)).rejects.toMatchObject({ code: 'EADDRNOTALLOWED', message: `${name} does not resolve to public addresses only` });
    }
    // Refused alike: a client that names internal hosts learns neither their addresses nor which exist.
    await expect(resolvePublicAddresses('unknown.example', options)).rejects.toMatchObject({
      code: 'EADDRNOTALLOWED',
      message: 'unknown.example does not resolve to public addresses only',
    });
  });

  it('takes a literal as its own address, refuses localhost names and tells a malformed name, without asking DNS', async () => {
    const dns = await running(new NameServer({}, true));
    const options = { signal: AbortSignal.timeout(2_000), servers: [dns.address] };
    expect(await resolvePublicAddresses('8.8.8.8', options)).toEqual([{ address: '8.8.8.8', family: 4 }]);
    expect(await resolvePublicAddresses('[2606:4700:4700::1111]', options)).toEqual([{ address: '2606:4700:4700::1111', family: 6 }]);
    for (const name of ['localhost', 'LOCALHOST.', 'api.localhost']) {
      await expect(resolvePublicAddresses(name, options)).rejects.toMatchObject({ code: 'EADDRNOTALLOWED' });
    }
    await expect(resolvePublicAddresses('127.0.0.1', options)).rejects.toMatchObject({ code: 'EADDRNOTALLOWED' });
    // A name DNS cannot be asked for (the URL parser lets `foo..example` through): no such name, not an outage to retry.
    await expect(resolvePublicAddresses('foo..example', options)).rejects.toMatchObject({ code: 'EADDRNOTALLOWED' });
    expect(dns.questions).toEqual([]);
  });
});
