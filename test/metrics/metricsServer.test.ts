// The /metrics listener of a process part (src/metrics/server.ts) and its settings: what it
// answers, METRICS_ENABLED, a port already in use (logged naming the setting, the process runs
// on), and start-up refusing a bad port value by name. No database: fast.
import assert from 'node:assert/strict';
import net from 'node:net';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { servePartMetrics, startMetricsServer, temporalRuntimeMetrics } from '../../src/metrics/server.js';

function memoryLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger('info', stream), lines };
}

test('GET /metrics answers the registries in the Prometheus text format; other paths are 404, other methods 405', async () => {
  const registry = new Registry();
  new Counter({ name: 'test_things_total', help: 'Things.', registers: [registry] }).inc(3);
  const server = await startMetricsServer({ registries: [registry], host: '127.0.0.1', port: 0 });
  try {
    const res = await fetch(server.url);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await res.text(), /^test_things_total 3$/m);
    assert.equal((await fetch(server.url.replace('/metrics', '/api/v1/health'))).status, 404);
    assert.equal((await fetch(server.url, { method: 'POST' })).status, 405);
  } finally {
    await server.close();
  }
});

test('METRICS_ENABLED=false serves no listener and no Temporal SDK metrics', async () => {
  const config = loadConfig({}, { METRICS_ENABLED: 'false', API_METRICS_PORT: '0' });
  const { logger } = memoryLogger();
  assert.equal(await servePartMetrics('api', config, logger), undefined);
  assert.equal(temporalRuntimeMetrics(config, logger), undefined);
  assert.equal(temporalRuntimeMetrics(config, logger, 'MEDIA_EDGE_TEMPORAL_METRICS_PORT'), undefined);
  const enabled = loadConfig({}, { METRICS_HOST: '::1', TEMPORAL_METRICS_PORT: '9999', MEDIA_EDGE_TEMPORAL_METRICS_PORT: '9998' });
  assert.equal(temporalRuntimeMetrics(enabled, logger)?.bindAddress, '[::1]:9999');
  // The media edge's own workers: a port of their own.
  assert.equal(temporalRuntimeMetrics(enabled, logger, 'MEDIA_EDGE_TEMPORAL_METRICS_PORT')?.bindAddress, '[::1]:9998');
});

test('a metrics port in use is logged as an error naming its setting, and start-up goes on without the listener', async () => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as net.AddressInfo).port;
  try {
    const { logger, lines } = memoryLogger();
    const config = loadConfig({}, { WORKER_METRICS_PORT: String(port) });
    assert.equal(await servePartMetrics('worker', config, logger), undefined);
    const error = lines.find((l) => l.level === 50);
    assert.ok(error, JSON.stringify(lines));
    assert.equal(error.setting, 'WORKER_METRICS_PORT');
    assert.match(String(error.msg), new RegExp(`WORKER_METRICS_PORT=${port} could not be bound`));
  } finally {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
  }
});

test('a bad metrics setting stops start-up naming it', () => {
  for (const [name, value] of [
    ['API_METRICS_PORT', '70000'],
    ['WORKER_METRICS_PORT', 'nine'],
    ['MEDIA_EDGE_METRICS_PORT', '-1'],
    ['TEMPORAL_METRICS_PORT', '1.5'],
    ['MEDIA_EDGE_TEMPORAL_METRICS_PORT', 'x'],
    ['METRICS_ENABLED', 'maybe'],
  ] as const) {
    assert.throws(() => loadConfig({}, { [name]: value }), (err: unknown) => err instanceof ConfigError && err.variable === name, `${name}=${value}`);
  }
  const defaults = loadConfig({});
  assert.deepEqual(
    [defaults.METRICS_ENABLED, defaults.METRICS_HOST, defaults.API_METRICS_PORT, defaults.WORKER_METRICS_PORT, defaults.MEDIA_EDGE_METRICS_PORT, defaults.TEMPORAL_METRICS_PORT, defaults.MEDIA_EDGE_TEMPORAL_METRICS_PORT],
    [true, '127.0.0.1', 9464, 9465, 9466, 9467, 9468],
  );
});
