import { createRequire } from 'node:module';
import type { FastifyBaseLogger } from 'fastify';
import { pino, type DestinationStream } from 'pino';
import type PinoPretty from 'pino-pretty';

/** The logger type shared by services and Fastify's per-request child loggers. */
export type Logger = FastifyBaseLogger;

/** Secrets that must never reach a log line, wherever a logged object carries them. */
const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-api-token"]',
  'req.headers["x-gateway-assertion"]',
  'headers["x-api-key"]',
  'apiKey',
  // The console's session cookie.
  'req.headers.cookie',
  'headers.cookie',
  'res.headers["set-cookie"]',
  // ioredis keeps the command that failed on its error: AUTH's arguments are the Redis password.
  'err.command.args',
  // Node's HTTP parser keeps a malformed request's raw head, its key and cookie headers included.
  'err.rawPacket',
];

const require = createRequire(import.meta.url);

/**
 * JSON lines for log collectors; a person at a terminal gets them pretty-printed instead. The
 * printer writes synchronously in this thread (not in a transport's worker), so the last line
 * before an exit is never lost. It is loaded only when used.
 */
function destination(fd: 1 | 2): DestinationStream {
  const stream = fd === 1 ? process.stdout : process.stderr;
  if (!stream.isTTY) return pino.destination({ fd, sync: true });
  const pretty = require('pino-pretty') as typeof PinoPretty;
  return pretty({ destination: fd, sync: true, colorize: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

/** What every logger of the project is built with, a test's included: the paths above redacted. */
export function loggerOptions(name: string, level: string) {
  return { name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
}

/** `toStderr` keeps stdout for a command's own output (the admin CLI's JSON). */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info', toStderr = false): Logger {
  return pino(loggerOptions(name, level), destination(toStderr ? 2 : 1));
}
