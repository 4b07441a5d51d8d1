/**
 * The /metrics listener of a process (docs/observability.md): Prometheus text format, on a
 * port of its own bound to METRICS_HOST (127.0.0.1 unless told otherwise), never on the
 * public API port, so the numbers (route names, team ids, error rates) are not handed to the
 * internet and need no credential of their own.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { Config } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { apiRegistry } from './apiMetrics.js';
import { callRegistry } from './callMetrics.js';
import { edgeRegistry } from './edgeMetrics.js';
import { workerRegistry } from './workerMetrics.js';

/** What each process part serves: the API and the worker both serve the calls' counters they count. */
export const REGISTRIES = {
  api: [apiRegistry, callRegistry],
  worker: [workerRegistry, callRegistry],
  mediaEdge: [edgeRegistry],
} as const;

export type MetricsPart = keyof typeof REGISTRIES;

export interface MetricsServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/** Answers GET /metrics with the registries' metrics; 404 elsewhere, 405 for other methods. */
export async function startMetricsServer(opts: { registries: readonly Registry[]; host: string; port: number }): Promise<MetricsServer> {
  const registry = Registry.merge([...opts.registries]);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: the metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`Collecting metrics failed: ${(err as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  return {
    port,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Serves one part's metrics when METRICS_ENABLED, on its port setting (`setting` names it in
 * the log). A port already in use is logged as an error naming the setting and the process
 * runs on without that listener: a second worker on the same host must not stay down for
 * its metrics (give each its own port, or 0 for any free one).
 */
export async function serveMetrics(opts: {
  enabled: boolean;
  host: string;
  port: number;
  setting: string;
  registries: readonly Registry[];
  logger: Logger;
}): Promise<MetricsServer | undefined> {
  if (!opts.enabled) return undefined;
  try {
    const server = await startMetricsServer(opts);
    opts.logger.info({ url: server.url }, 'metrics listening');
    return server;
  } catch (err) {
    opts.logger.error({ err, setting: opts.setting, port: opts.port }, `metrics not served: ${opts.setting}=${opts.port} could not be bound (${(err as Error).message}); set another port (0 = any free one) or METRICS_ENABLED=false`);
    return undefined;
  }
}

/** The settings of each part's listener. */
const PORT_SETTING = { api: 'API_METRICS_PORT', worker: 'WORKER_METRICS_PORT', mediaEdge: 'MEDIA_EDGE_METRICS_PORT' } as const;

type MetricsConfig = Pick<Config, 'METRICS_ENABLED' | 'METRICS_HOST' | 'API_METRICS_PORT' | 'WORKER_METRICS_PORT' | 'MEDIA_EDGE_METRICS_PORT' | 'TEMPORAL_METRICS_PORT' | 'MEDIA_EDGE_TEMPORAL_METRICS_PORT'>;

/** Serves a process part's /metrics as configured; `registries` overrides what it serves (npm start serves the calls' counters once). */
export function servePartMetrics(part: MetricsPart, config: MetricsConfig, logger: Logger, registries: readonly Registry[] = REGISTRIES[part]): Promise<MetricsServer | undefined> {
  const setting = PORT_SETTING[part];
  return serveMetrics({ enabled: config.METRICS_ENABLED, host: config.METRICS_HOST, port: config[setting], setting, registries, logger });
}

/** host:port, with an IPv6 host in brackets. */
function bindAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * installTemporalRuntime's metrics option: the SDK's worker metrics on TEMPORAL_METRICS_PORT
 * (the worker, npm start) or MEDIA_EDGE_TEMPORAL_METRICS_PORT (npm run media-edge: its own
 * speech and dial workers), or none when METRICS_ENABLED is false.
 */
export function temporalRuntimeMetrics(
  config: MetricsConfig,
  logger: Logger,
  setting: 'TEMPORAL_METRICS_PORT' | 'MEDIA_EDGE_TEMPORAL_METRICS_PORT' = 'TEMPORAL_METRICS_PORT',
): { bindAddress: string; onError: (err: Error) => void } | undefined {
  if (!config.METRICS_ENABLED) return undefined;
  return {
    bindAddress: bindAddress(config.METRICS_HOST, config[setting]),
    onError: (err) => logger.error({ err, setting }, `Temporal SDK metrics not served: ${setting}=${config[setting]} could not be bound (${err.message}); set another port or METRICS_ENABLED=false`),
  };
}
