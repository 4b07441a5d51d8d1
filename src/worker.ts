// The worker process on its own (production topology: `npm run worker`).
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig } from './config/index.js';
import { openDatabase, openTemporal } from './infrastructure.js';
import { createLogger } from './logging/logger.js';
import { ensureCallsReconciler } from './services/calls.js';
import { createWorker, installTemporalRuntime } from './temporal/worker.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  installTemporalRuntime();
  const database = await openDatabase(config, logger);
  const temporal = await openTemporal(config, logger);
  const connection = await NativeConnection.connect({ address: temporal.address });
  const worker = await createWorker({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    deps: { config, pool: database.pool, logger, temporal: temporal.client },
  });
  await ensureCallsReconciler({ temporal: temporal.client, config });
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  await worker.run();
  await connection.close();
  await temporal.close();
  await database.close();
}

main().catch((err) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : `Worker failed: ${(err as Error).stack ?? err}`}\n`);
  process.exit(1);
});
