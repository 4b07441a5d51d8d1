// `npm run media-edge`: the media edge as its own process (production topology). It needs
// the API (API_URL, MEDIA_EDGE_SECRET), Temporal (TEMPORAL_ADDRESS) and the recordings
// store; `npm start` runs the same edge inside its one process instead.
import { ConfigError, loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { createRecordingStore } from '../recordings/index.js';
import { temporalAddress } from '../temporal/client.js';
import { installTemporalRuntime } from '../temporal/worker.js';
import { servePartMetrics, temporalRuntimeMetrics } from '../metrics/server.js';
import { installTracing, shutdownTracing } from '../tracing/tracing.js';
import { loadMediaEdgeConfig } from './server.js';
import { createEndpointing } from './audio/endpointingConfig.js';
import { createSpeechEngines, SpeechConfigError } from './speech/speechEngines.js';
import { startVoiceEdge } from './voiceEdge.js';
import { chatCompletionsClientFromConfig } from '../llm/chatCompletions.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const edgeConfig = loadMediaEdgeConfig();
  const logger = createLogger(edgeConfig.LOG_LEVEL);
  // The SDK's metrics of the edge's own workers on a port of their own; SIGTERM is handled below, not by the SDK.
  installTemporalRuntime('WARN', temporalRuntimeMetrics(config, logger, 'MEDIA_EDGE_TEMPORAL_METRICS_PORT'), { ownSignals: true });
  await installTracing({ config, serviceName: 'voice-agent-media-edge' });
  const speech = createSpeechEngines(process.env);
  const endpointing = createEndpointing(process.env);
  const edge = await startVoiceEdge({
    config: edgeConfig,
    logger,
    speech,
    endpointing,
    recordings: createRecordingStore(config),
    temporalAddress: temporalAddress(config),
    temporalNamespace: config.TEMPORAL_NAMESPACE,
    instanceId: process.env.MEDIA_EDGE_INSTANCE_ID || undefined,
    llm: chatCompletionsClientFromConfig(config),
  });
  process.stdout.write(`Media edge   ${edge.url} (task queue ${edge.taskQueue})\n`);
  const metrics = await servePartMetrics('mediaEdge', config, logger);
  let stopping = false;
  // Drains (docs/media-edge.md, "Stopping the edge"): the calls held end and are reported, then the workers stop once.
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, calls: edge.calls.size }, 'media edge stopping');
    let failed = false;
    await edge.close().catch((err: unknown) => {
      failed = true;
      logger.error({ err }, 'media edge stopped with an error');
    });
    await speech.close();
    await endpointing.close();
    await metrics?.close();
    await shutdownTracing();
    process.exit(failed ? 1 : 0);
  };
  // `on`, not `once`: a second signal while draining must not meet the default handler, which kills the process.
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof SpeechConfigError;
  process.stderr.write(`${known ? (err as Error).message : `Media edge start-up failed: ${(err as Error).stack ?? String(err)}`}\n`);
  process.exit(1);
});
