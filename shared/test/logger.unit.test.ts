import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loggerOptions } from '../src/logger.ts';

/** What the project's logger writes for `object`, as one parsed JSON line. */
function logged(object: Record<string, unknown>): Record<string, unknown> {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
  pino(loggerOptions('logger-test', 'info'), sink).warn(object, 'failed');
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

describe('the logger', () => {
  it("redacts the password of a Redis AUTH that failed, which ioredis keeps on the error's command", () => {
    const error = Object.assign(new Error('WRONGPASS invalid username-password pair'), { command: { name: 'auth', args: ['Rotated-Redis-Pw'] } });
    expect(logged({ err: error }).err).toMatchObject({ message: 'WRONGPASS invalid username-password pair', command: { name: 'auth', args: '[redacted]' } });
  });

  it("redacts a malformed request's raw head, which carries its API key and session cookie", () => {
    const error = Object.assign(new Error('Parse Error: Invalid header value char'), {
      code: 'HPE_INVALID_HEADER_TOKEN',
      rawPacket: Buffer.from('POST /graphql HTTP/1.1\r\nX-API-Key: svc_live_secretsecret\r\nCookie: ots_session=abc\r\n'),
    });
    // A Buffer would be logged as its bytes, the key among them.
    expect(logged({ err: error }).err).toMatchObject({ code: 'HPE_INVALID_HEADER_TOKEN', rawPacket: '[redacted]' });
  });
});
