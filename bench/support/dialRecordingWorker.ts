// The service's worker (src/worker.ts) as a benchmark runs it, with one addition: every dial
// the voice provider is asked for is written to stdout as `dial <call id> <epoch ms>`, the
// instant the provider was asked, so a benchmark can check the carrier pacing from outside.
import { loadConfig } from '../../src/config/index.js';
import { openDatabase, openRedis, openTemporal } from '../../src/infrastructure.js';
import { createLogger } from '../../src/logging/logger.js';
import { createVoiceProvider, type VoiceProvider } from '../../src/telephony/index.js';
import { installTemporalRuntime, startServiceWorker } from '../../src/temporal/worker.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  installTemporalRuntime();
  const database = await openDatabase(config, logger);
  const temporal = await openTemporal(config, logger);
  const redis = openRedis(config, logger);
  const provider = createVoiceProvider(config);
  const recording: VoiceProvider = {
    name: provider.name,
    placeCall: async (request) => {
      process.stdout.write(`dial ${request.callId} ${Date.now()}\n`);
      return provider.placeCall(request);
    },
  };
  const worker = await startServiceWorker(temporal.address, { config, pool: database.pool, logger, temporal: temporal.client, redis, voiceProvider: recording });
  process.stdout.write('worker ready\n');
  const stop = () => void worker.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await worker.done;
  redis?.disconnect();
  await temporal.close();
  await database.close();
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
