// The API process on its own (production topology: `npm run api`).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import { createApp } from './api/app.js';
import { answerClientError } from './api/clientError.js';
import type { RouteDefinition } from './api/route.js';
import { KeyUsageRecorder } from './api/middleware/keyUsage.js';
import { ConfigError, loadConfig, secretBox, type Config } from './config/index.js';
import type { Pool } from './db/pool.js';
import { openDatabase, openRedis, openTemporal } from './infrastructure.js';
import { createLogger, type Logger } from './logging/logger.js';
import type { ListContactsAddedListener } from './services/lists.js';
import { sealSecretsAtRest } from './services/secretsAtRest.js';
import { servePartMetrics } from './metrics/server.js';
import { liveCallTaskQueue } from '../workflows/contracts.js';
import { installTracing, shutdownTracing } from './tracing/tracing.js';
import type { RateLimiter } from './rateLimit/limiter.js';
import type { RecordingStore, SpeechSynthesis } from './recordings/index.js';
import type { HostResolver } from './webhooks/addresses.js';

export interface RunningApi {
  port: number;
  server: http.Server;
  close(): Promise<void>;
}

/**
 * Builds the app over the given dependencies, seals the stored secrets not sealed under
 * SECRETS_ENCRYPTION_KEY yet (docs/security.md), and listens on PORT.
 */
export async function startApi(opts: {
  config: Config;
  pool: Pool;
  temporal: Client;
  logger: Logger;
  redis?: Redis;
  /** Default: built from config (createApp). */
  rateLimiter?: RateLimiter;
  /** Default: wake the list's batches (createApp). */
  listContactsAdded?: ListContactsAddedListener;
  /** Default: the store RECORDINGS_STORE names (createApp). */
  recordings?: RecordingStore;
  /** Default: text2wave (simulated calls' recordings). */
  speech?: SpeechSynthesis;
  /** Default: dns.lookup (event webhook address checks). */
  resolveHost?: HostResolver;
  /** The workers' live-call queue, where web and inbound calls start; default none (TEMPORAL_TASK_QUEUE). */
  liveTaskQueue?: string;
  port?: number;
  routes?: RouteDefinition[];
}): Promise<RunningApi> {
  // First: without SECRETS_ENCRYPTION_KEY this fails naming it, before anything starts.
  secretBox(opts.config);
  // A database that is down at start-up must not keep the API down (requests then answer
  // their own errors); the pass runs again at the next start.
  await sealSecretsAtRest({ pool: opts.pool, config: opts.config, logger: opts.logger }).catch((err: unknown) =>
    opts.logger.error({ err }, 'sealing secrets at rest failed; the next start tries again'),
  );
  const keyUsage = new KeyUsageRecorder(opts.pool, opts.logger, opts.config.KEY_LAST_USED_FLUSH_MS);
  keyUsage.start();
  const app = createApp({ ...opts, keyUsage }, opts.routes);
  const server = http.createServer(app.callback());
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? opts.config.PORT, opts.config.HOST, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    server,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await keyUsage.stop();
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  await installTracing({ config, serviceName: 'voice-agent-api' });
  const database = await openDatabase(config, logger);
  const temporal = await openTemporal(config, logger);
  const redis = openRedis(config, logger);
  // The workers (npm run worker) poll the live-call queue too: web and inbound calls start there.
  const api = await startApi({ config, pool: database.pool, temporal: temporal.client, logger, redis, liveTaskQueue: liveCallTaskQueue(config.TEMPORAL_TASK_QUEUE) });
  logger.info({ port: api.port }, 'API listening');
  await servePartMetrics('api', config, logger);
  const stop = async () => {
    await api.close();
    redis?.disconnect();
    await temporal.close();
    await database.close();
    await shutdownTracing();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof ConfigError ? err.message : `Start-up failed: ${(err as Error).stack ?? err}`}\n`);
    process.exit(1);
  });
}
