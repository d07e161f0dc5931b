import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';

/** The logger type shared by services and Fastify's per-request child loggers. */
export type Logger = FastifyBaseLogger;

/** Header values that must never reach a log line. */
export const REDACTED_PATHS = [
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
];

/** `toStderr` keeps stdout for a command's own output (the admin CLI's JSON). */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info', toStderr = false): Logger {
  const options = { name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return toStderr ? pino(options, pino.destination(2)) : pino(options);
}
