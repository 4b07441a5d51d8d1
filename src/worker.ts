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
  installTemporalRuntime('WARN', temporalRuntimeMetrics(config, logger));
  await installTracing({ config, serviceName: 'voice-agent-worker' });
  const database = await openDatabase(config, logger);
  const temporal = await openTemporal(config, logger);
  // The dial pacer's shared store when REDIS_URL is set (docs/calls.md, "Carrier pacing").
  const redis = openRedis(config, logger);
  const worker = await startServiceWorker(temporal.address, { config, pool: database.pool, logger, temporal: temporal.client, redis });
  watchDatabase(database.pool);
  await servePartMetrics('worker', config, logger);
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  await worker.done;
  redis?.disconnect();
  await temporal.close();
  await database.close();
  await shutdownTracing();
}

main().catch((err) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `Worker failed: ${(err as Error).stack ?? err}`}\n`);
  process.exit(1);
});
