import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loggerOptions, type Logger } from '../logger.ts';

/**
 * A logger that keeps every line it writes, at trace level and redacting as the services' loggers
 * do: for tests that no secret reaches a log.
 */
export function recordingLogger(name: string): { logger: Logger; written: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino(loggerOptions(name, 'trace'), sink), written: () => lines.join('') };
}
