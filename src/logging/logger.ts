import { trace } from '@opentelemetry/api';
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { redactCredentials, redactLogValue } from './redaction.js';

export type { Logger };

/**
 * Every line passes through the redaction of src/logging/redaction.ts: the logged object
 * (formatters.log), the message and format arguments (logMethod), errors (serialized and
 * redacted by the log formatter, so the err serializer only passes them on) and child
 * bindings (createLogger's child).
 */
const redactingOptions: Pick<LoggerOptions, 'formatters' | 'hooks' | 'serializers'> = {
  formatters: { log: redactLogValue },
  serializers: { err: (value: unknown) => value },
  hooks: {
    logMethod(args, method) {
      const redacted = args.map((a) => (typeof a === 'string' ? redactCredentials(a) : a)) as Parameters<typeof method>;
      // Without a message pino takes the error's own, which would bypass the redaction.
      const [first] = redacted;
      if (redacted.length === 1 && typeof first === 'object' && first !== null) {
        const err = first instanceof Error ? first : (first as { err?: unknown }).err;
        if (err instanceof Error && (first as { msg?: unknown }).msg === undefined) redacted.push(redactCredentials(err.message) as never);
      }
      method.apply(this, redacted);
    },
  },
};

/** The trace id of a line logged inside a traced request or activity (tracing on); nothing otherwise. */
function traceIdOfLine(): { traceId?: string } {
  const span = trace.getActiveSpan();
  return span ? { traceId: span.spanContext().traceId } : {};
}

/**
 * Structured JSON logs, credentials redacted, with the trace id when tracing is on. The CLI logs to stderr so that stdout stays one
 * JSON object; tests pass a stream to read what would be written.
 */
export function createLogger(level: string, destination: 1 | 2 | DestinationStream = 1): Logger {
  const stream = typeof destination === 'number' ? pino.destination({ fd: destination, sync: destination === 2 }) : destination;
  const logger = pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime, mixin: traceIdOfLine, ...redactingOptions }, stream);
  // pino applies no formatter to a child's bindings; children inherit this child() from the root.
  const pinoChild = logger.child;
  logger.child = function child(this: Logger, bindings, options) {
    return pinoChild.call(this, redactLogValue(bindings), options);
  } as Logger['child'];
  return logger;
}
