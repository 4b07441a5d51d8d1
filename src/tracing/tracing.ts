/**
 * OpenTelemetry traces (docs/observability.md, "Traces"). One trace follows a request: the
 * API's HTTP span, the Temporal client's StartWorkflow / SignalWorkflow span, the workflow's
 * spans (its interceptor module is bundled into the workflow code), the activities' spans
 * on the workers and the media edge, and the SQL they run (pg), the context carried in
 * Temporal headers from process to process.
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (or a test hands in its own span
 * processor): then nothing of the SDK is even loaded, the OpenTelemetry API's calls are
 * its no-op ones, and workers and bundles are built as before.
 */
import { createRequire } from 'node:module';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { Sinks } from '@temporalio/workflow';
import type { Config } from '../config/index.js';

export type TracingConfig = Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_HEADERS' | 'OTEL_SERVICE_NAME'>;

/** What a traced worker adds to its options: the activity interceptors and the sink of the workflows' spans. */
export interface TracedWorkerOptions {
  interceptors?: Pick<WorkerInterceptors, 'activity'>;
  // The sink's type is the interceptors package's; workers only pass it on.
  sinks?: InjectedSinks<Sinks>;
}

interface InstalledTracing {
  serviceName: string;
  clientInterceptors: ClientInterceptors;
  workerOptions: TracedWorkerOptions;
  workflowInterceptorModule: string;
  shutdown(): Promise<void>;
}

let installed: InstalledTracing | undefined;

/** Incoming requests never traced: scrapes and health probes would fill the backend with one-span traces. */
const UNTRACED_PATHS = new Set(['/metrics', '/api/v1/health']);

/** The base URL's traces path (OTLP/HTTP: <endpoint>/v1/traces). */
export function otlpTracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/** OTEL_EXPORTER_OTLP_HEADERS (`k=v,k2=v2`, values URL-encoded) as headers. */
export function otlpHeaders(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}

/**
 * Starts tracing for this process when OTEL_EXPORTER_OTLP_ENDPOINT is set (or `spanProcessor`
 * is given, as tests do): the global tracer provider, the http and pg instrumentations, and
 * the Temporal interceptors that the client, the workers and the workflow bundle pick up
 * (temporalClientInterceptors, tracedWorkerOptions, workflowInterceptorModules). Call it
 * first, before the Temporal client, the workers or the bundle are made. Returns whether
 * tracing is on.
 */
export async function installTracing(opts: { config: TracingConfig; serviceName: string; spanProcessor?: SpanProcessor }): Promise<boolean> {
  if (installed) return true;
  const endpoint = opts.config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint && !opts.spanProcessor) return false;
  const [api, { registerInstrumentations }, { HttpInstrumentation }, { PgInstrumentation }, { Resource }, sdk, { NodeTracerProvider }, temporalOtel] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-trace-node'),
    import('@temporalio/interceptors-opentelemetry'),
  ]);
  const serviceName = opts.config.OTEL_SERVICE_NAME ?? opts.serviceName;
  const resource = new Resource({ 'service.name': serviceName });
  let processor = opts.spanProcessor;
  if (!processor) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
    processor = new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url: otlpTracesUrl(endpoint!), headers: otlpHeaders(opts.config.OTEL_EXPORTER_OTLP_HEADERS) }));
  }
  // Every trace is kept (ParentBased(AlwaysOn), stated rather than read from OTEL_TRACES_SAMPLER): sampling is the collector's.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor], sampler: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }) });
  // The AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]),
        // An outgoing request outside any trace (a timer's) is no trace of its own.
        requireParentforOutgoingSpans: true,
      }),
      // Queries outside a traced request or activity (sweepers, flushes) make no traces; parameters never enter a span.
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
    ],
  });
  patchLoadedModules();
  const tracer = api.trace.getTracer('voice-agent');
  installed = {
    serviceName,
    clientInterceptors: { workflow: [new temporalOtel.OpenTelemetryWorkflowClientInterceptor({ tracer })] },
    workerOptions: {
      interceptors: {
        activity: [
          (ctx) => ({
            inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
            outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
      },
      sinks: { exporter: temporalOtel.makeWorkflowExporter(processor, resource) } as InjectedSinks<Sinks>,
    },
    workflowInterceptorModule: require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
    async shutdown() {
      unregister();
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    },
  };
  return true;
}

const require = createRequire(import.meta.url);

/**
 * The instrumentations patch a module when it is next required; this project imports http
 * and pg as ES modules, often before tracing starts. Requiring them here hands the same
 * module objects (Node shares them between import and require) to the instrumentations,
 * which patch the prototypes every user of the module calls through.
 */
function patchLoadedModules(): void {
  require('http');
  require('https');
  require('pg');
  createRequire(require.resolve('pg'))('pg-pool');
}

/** Whether tracing is on in this process. */
export function tracingEnabled(): boolean {
  return installed !== undefined;
}

/** The Temporal client's interceptors (StartWorkflow, SignalWorkflow spans, context in headers); undefined when off. */
export function temporalClientInterceptors(): ClientInterceptors | undefined {
  return installed?.clientInterceptors;
}

/** Options every Worker.create spreads in: activity spans and the workflow spans' sink; empty when off. */
export function tracedWorkerOptions(): TracedWorkerOptions {
  return installed?.workerOptions ?? {};
}

/** The workflow interceptor modules a bundle must include (the workflow's spans); none when off. */
export function workflowInterceptorModules(): string[] {
  return installed ? [installed.workflowInterceptorModule] : [];
}

/** Sends the spans still buffered and stops tracing (at process stop; tests between files). */
export async function shutdownTracing(): Promise<void> {
  const current = installed;
  installed = undefined;
  await current?.shutdown();
}
