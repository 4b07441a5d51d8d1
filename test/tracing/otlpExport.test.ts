// The trace settings and the OTLP export (docs/observability.md, "Traces"): bad settings stop
// start-up naming the variable; without OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced; with it
// the real Koa app's spans (the HTTP span, the SQL under it) reach a fake collector
// (test/support/otlpReceiver.ts) as OTLP over HTTP with protobuf bodies, with the collector
// headers and the service name.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import {
  installTracing,
  otlpHeaders,
  shutdownTracing,
  temporalClientInterceptors,
  tracedWorkerOptions,
  tracingEnabled,
  workflowInterceptorModules,
} from '../../src/tracing/tracing.js';
import { calleeNumber } from '../support/calls.js';
import { createTestTeam, startTestApi, type TestApi } from '../support/app.js';
import { OtlpReceiver } from '../support/otlpReceiver.js';

let api: TestApi | undefined;
let receiver: OtlpReceiver | undefined;

after(async () => {
  await api?.close();
  await shutdownTracing();
  await receiver?.close();
});

/** A client that never connects: the routes these tests call do not reach Temporal. */
const unusedTemporal = () => new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });

test('the trace settings are validated at start-up, naming the variable', () => {
  const refused = (env: Record<string, string>, variable: string) =>
    assert.throws(() => loadConfig(env), (err: unknown) => err instanceof ConfigError && err.variable === variable, variable);
  refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://collector:4317' }, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  refused({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  refused({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization' }, 'OTEL_EXPORTER_OTLP_HEADERS');
  refused({ OTEL_SERVICE_NAME: 'voice agent' }, 'OTEL_SERVICE_NAME');
  const defaults = loadConfig({});
  assert.equal(defaults.OTEL_EXPORTER_OTLP_ENDPOINT, undefined);
  assert.equal(defaults.OTEL_EXPORTER_OTLP_PROTOCOL, 'http/protobuf');
  const set = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com:4318', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%3D, team = ops', OTEL_SERVICE_NAME: 'edge-1' });
  assert.equal(set.OTEL_EXPORTER_OTLP_ENDPOINT, 'https://otel.example.com:4318');
  assert.deepEqual(otlpHeaders(set.OTEL_EXPORTER_OTLP_HEADERS), { 'x-api-key': 'abc=', team: 'ops' });
});

test('without OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced: no span in a request, no interceptors, a plain bundle', async () => {
  assert.equal(await installTracing({ config: loadConfig({}), serviceName: 'voice-agent-api' }), false);
  assert.equal(tracingEnabled(), false);
  assert.equal(temporalClientInterceptors(), undefined);
  assert.deepEqual(tracedWorkerOptions(), {});
  assert.deepEqual(workflowInterceptorModules(), []);
  // The request's code asks for the active span (the access log's trace id): the no-op API has none to give.
  let logged = '';
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logged += String(chunk);
      done();
    },
  });
  const untraced = await startTestApi({ temporal: unusedTemporal(), logger: createLogger('info', logStream) });
  try {
    const team = await createTestTeam(untraced.pool);
    const res = await untraced.request('POST', '/api/v1/create-contact', { key: team.apiKey, body: { phone_number: calleeNumber('7701'), first_name: 'Ada' } });
    assert.equal(res.status, 201, res.text);
    const requestLine = logged
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === 'request');
    assert.ok(requestLine?.requestId, 'the access log line');
    assert.equal('traceId' in requestLine, false);
  } finally {
    await untraced.close();
  }
});

test('with OTEL_EXPORTER_OTLP_ENDPOINT the API request and its SQL reach the collector as OTLP/HTTP protobuf', async () => {
  receiver = await OtlpReceiver.start();
  const overrides = {
    // A trailing slash still means <endpoint>/v1/traces.
    OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.endpoint}/`,
    OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token',
    OTEL_SERVICE_NAME: 'voice-agent-api-test',
  };
  assert.equal(await installTracing({ config: loadConfig({}, overrides), serviceName: 'voice-agent-api' }), true);
  api = await startTestApi({ temporal: unusedTemporal(), config: overrides });
  const team = await createTestTeam(api.pool);
  const requestId = `otlp-test-${Date.now()}`;
  const res = await api.request('POST', '/api/v1/create-contact', { key: team.apiKey, headers: { 'X-Request-Id': requestId }, body: { phone_number: calleeNumber('7702'), first_name: 'Ada' } });
  assert.equal(res.status, 201, res.text);
  // Stopping flushes what the batch processor holds, as a process does at shutdown.
  await shutdownTracing();

  assert.ok(receiver.exports.length > 0, 'the collector received an export');
  for (const received of receiver.exports) {
    assert.equal(received.path, '/v1/traces');
    assert.equal(received.headers['content-type'], 'application/x-protobuf');
    assert.equal(received.headers.authorization, 'Bearer collector-token');
  }
  const http = await receiver.waitForSpan((s) => s.attributes['request.id'] === requestId);
  assert.equal(http.name, 'POST /api/v1/create-contact');
  assert.equal(http.kind, 2, 'SPAN_KIND_SERVER');
  assert.equal(http.parentSpanId, '');
  assert.equal(http.serviceName, 'voice-agent-api-test');
  assert.equal(http.attributes['http.route'], '/api/v1/create-contact');
  assert.equal(http.attributes['http.status_code'], 201n);
  assert.ok(http.endNanos > http.startNanos);
  const sql = receiver.spans.filter((s) => s.parentSpanId === http.spanId && s.attributes['db.system'] === 'postgresql');
  assert.ok(sql.length > 0, 'the SQL of the request, under its span');
  assert.ok(sql.every((s) => s.traceId === http.traceId && s.serviceName === 'voice-agent-api-test'));
  assert.ok(sql.some((s) => /INSERT INTO contacts/i.test(String(s.attributes['db.statement']))), 'the contact insert');
});
