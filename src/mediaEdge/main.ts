// `npm run media-edge`: the media edge as its own process (production topology). It needs
// the API (API_URL, MEDIA_EDGE_SECRET), Temporal (TEMPORAL_ADDRESS) and the recordings
// store; `npm start` runs the same edge inside its one process instead.
import { ConfigError, loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { createRecordingStore } from '../recordings/index.js';
import { temporalAddress } from '../temporal/client.js';
import { installTemporalRuntime } from '../temporal/worker.js';
import { servePartMetrics } from '../metrics/server.js';
import { installTracing, shutdownTracing } from '../tracing/tracing.js';
import { loadMediaEdgeConfig } from './server.js';
import { createEndpointing } from './audio/endpointingConfig.js';
import { createSpeechEngines, SpeechConfigError } from './speech/speechEngines.js';
import { startVoiceEdge } from './voiceEdge.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const edgeConfig = loadMediaEdgeConfig();
  const logger = createLogger(edgeConfig.LOG_LEVEL);
  installTemporalRuntime();
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
  });
  process.stdout.write(`Media edge   ${edge.url} (task queue ${edge.taskQueue})\n`);
  await servePartMetrics('mediaEdge', config, logger);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await edge.close();
    await speech.close();
    await endpointing.close();
    await shutdownTracing();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof SpeechConfigError;
  process.stderr.write(`${known ? (err as Error).message : `Media edge start-up failed: ${(err as Error).stack ?? String(err)}`}\n`);
  process.exit(1);
});
