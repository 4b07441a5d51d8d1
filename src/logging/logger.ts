import pino, { type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs. The CLI logs to stderr so that stdout stays one JSON object. */
export function createLogger(level: string, destination: 1 | 2 = 1): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ fd: destination, sync: destination === 2 }));
}
