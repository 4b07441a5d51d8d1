/**
 * A trace's context as the W3C `traceparent` value, for what crosses a boundary that carries
 * no headers of its own: a web call's trace is kept with the call (call_traces) and handed to
 * the media edge in the answer to its claim or redemption (docs/observability.md, "Traces").
 * With tracing off the OpenTelemetry API is its no-op self: nothing is written or read.
 */
import { context, propagation, ROOT_CONTEXT, trace, type Context } from '@opentelemetry/api';

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The active span's traceparent; undefined outside a span (or with tracing off). */
export function activeTraceparent(): string | undefined {
  if (!trace.getSpan(context.active())) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a traceparent names, to parent later spans and requests on; undefined when it is malformed. */
export function contextOfTraceparent(traceparent: string | undefined): Context | undefined {
  if (!traceparent || !TRACEPARENT.test(traceparent)) return undefined;
  const extracted = propagation.extract(ROOT_CONTEXT, { traceparent });
  return trace.getSpanContext(extracted) ? extracted : undefined;
}
