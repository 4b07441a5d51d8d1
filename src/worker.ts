// The worker process on its own (production topology: `npm run worker`).
import { ConfigError, loadConfig, secretBox } from './config/index.js';
import { openDatabase, openRedis, openTemporal } from './infrastructure.js';
import { createLogger } from './logging/logger.js';
import { installTemporalRuntime, startServiceWorker } from './temporal/worker.js';
import { servePartMetrics, temporalRuntimeMetrics } from './metrics/server.js';
import { watchDatabase } from './metrics/workerMetrics.js';
import { installTracing, shutdownTracing } from './tracing/tracing.js';

async function main(): Promise<void> {
  const config = loadConfig();
  // Webhook deliveries open the endpoints' secrets with it: fail now, naming it, not at the first delivery.
  secretBox(config);
  const logger = createLogger(config.LOG_LEVEL);
  // SIGTERM is handled below: the workers stop, then the connections and the metrics listener close, exit 0.
  installTemporalRuntime('WARN', temporalRuntimeMetrics(config, logger), { ownSignals: true });
  await installTracing({ config, serviceName: 'voice-agent-worker' });
  const database = await openDatabase(config, logger);
  const temporal = await openTemporal(config, logger);
  // The dial pacer's shared store when REDIS_URL is set (docs/calls.md, "Carrier pacing").
  const redis = openRedis(config, logger);
  const worker = await startServiceWorker(temporal.address, { config, pool: database.pool, logger, temporal: temporal.client, redis });
  watchDatabase(database.pool);
  const metrics = await servePartMetrics('worker', config, logger);
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping');
    void worker.shutdown().catch(() => undefined);
  };
  // `on`, not `once`: a second signal while stopping must not meet the default handler, which kills the process.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  // Settles when a signal stopped the workers (or they failed: then main() rejects, exit 1).
  await worker.done;
  redis?.disconnect();
  await metrics?.close();
  await temporal.close();
  await database.close();
  await shutdownTracing();
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `Worker failed: ${(err as Error).stack ?? err}`}\n`);
  process.exit(1);
});
