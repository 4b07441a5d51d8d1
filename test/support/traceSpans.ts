// Reading a test's traces: tracing installed with an in-memory exporter, and the finished
// spans' parent chains (test/tracing/*Trace.test.ts).
import assert from 'node:assert/strict';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { installTracing } from '../../src/tracing/tracing.js';

/**
 * Installs tracing into an in-memory exporter. First thing in a file's `before`: the Temporal
 * client, the workflow bundle and the workers pick tracing up when they are made.
 */
export async function installTestTracing(serviceName: string): Promise<InMemorySpanExporter> {
  const exporter = new InMemorySpanExporter();
  assert.equal(await installTracing({ config: {}, serviceName, spanProcessor: new SimpleSpanProcessor(exporter) }), true);
  return exporter;
}

export const spanIdOf = (s: ReadableSpan) => s.spanContext().spanId;

/** The span's ancestors, nearest first, as far as the exported spans reach. */
export function ancestry(span: ReadableSpan, spans: ReadableSpan[]): ReadableSpan[] {
  const chain: ReadableSpan[] = [];
  let parentId = span.parentSpanId;
  while (parentId) {
    const parent = spans.find((s) => spanIdOf(s) === parentId);
    assert.ok(parent, `the parent ${parentId} of ${chain.at(-1)?.name ?? span.name} was exported`);
    chain.push(parent);
    parentId = parent.parentSpanId;
  }
  return chain;
}

/**
 * The finished spans once `until` holds, or as they are after 10 s: a workflow's spans reach
 * the worker's sink after the activation that ended them, which may be after the client saw
 * the result, and the edge's requests end after the call did.
 */
export async function spansOnce(exporter: InMemorySpanExporter, until: (spans: ReadableSpan[]) => boolean): Promise<ReadableSpan[]> {
  for (let waited = 0; ; waited += 50) {
    const spans = exporter.getFinishedSpans();
    if (until(spans) || waited >= 10_000) return spans;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
