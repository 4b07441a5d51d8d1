// Traces from the API request to the SQL of the activities (docs/observability.md, "Traces"):
// the real Koa app, a call worker made by the production createWorker (the traced workflow
// bundle, the activity interceptors, the workflows' span sink), a Temporal client with the
// tracing interceptors, on a Temporal dev server, with an in-memory span exporter. One
// create-phone-call (simulator) is one trace whose parent chain runs from the HTTP span to
// the SQL of the dial activity; one cancel-call, from the HTTP span to the workflow's signal
// handler. The recorded workflow histories replay with the interceptors
// in the bundle (they add no commands).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createLogger } from '../../src/logging/logger.js';
import { createWorker, workflowBundle } from '../../src/temporal/worker.js';
import { shutdownTracing, temporalClientInterceptors, tracedWorkerOptions } from '../../src/tracing/tracing.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi } from '../support/app.js';
import { calleeNumber, callTestConfig } from '../support/calls.js';
import { createLocalEnv } from '../support/temporal.js';
import { ancestry, installTestTracing, spanIdOf as idOf, spansOnce } from '../support/traceSpans.js';

const { History } = proto.temporal.api.history.v1;
const WORKFLOWS_TESTS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'workflows');

let exporter: InMemorySpanExporter;
let env: TestWorkflowEnvironment;
let api: TestApi;
let worker: Worker;
let running: Promise<void>;
/** The API's log lines. */
let logged = '';

before(async () => {
  // First: the client, the bundle and the workers pick tracing up when they are made.
  exporter = await installTestTracing('trace-test');
  // The dev server, as in production: the Java time-skipping server drops a signal's headers.
  env = await createLocalEnv();
  const traced = new Client({ connection: env.connection, interceptors: temporalClientInterceptors() });
  const config = callTestConfig({ SIMULATOR_CALL_SECONDS: '1' });
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logged += String(chunk);
      done();
    },
  });
  api = await startTestApi({ temporal: traced, logger: createLogger('info', logStream), config: { TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE, SIMULATOR_CALL_SECONDS: '1', DIAL_RATE_PER_NUMBER: '1000' } });
  worker = await createWorker({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    deps: { config, pool: api.pool, logger: createLogger('silent'), temporal: traced },
  });
  running = worker.run();
});

after(async () => {
  worker?.shutdown();
  await running;
  await api?.close();
  await env?.teardown();
  await shutdownTracing();
});

/** The span a request with this X-Request-Id made. */
const requestSpan = (spans: ReadableSpan[], requestId: string) => spans.find((s) => s.attributes['request.id'] === requestId);

/** Whether a span named `name` is in the trace of the request with this id. */
const inRequestTrace = (name: string, requestId: string) => (spans: ReadableSpan[]) =>
  spans.some((s) => s.name === name && s.spanContext().traceId === requestSpan(spans, requestId)?.spanContext().traceId);

test('one create-phone-call is one trace: HTTP span → StartWorkflow → RunWorkflow → the dial activity → its SQL', async () => {
  const team = await createTestTeam(api.pool);
  const requestId = `trace-test-${Date.now()}`;
  const res = await api.request('POST', '/api/v1/create-phone-call', {
    key: team.apiKey,
    headers: { 'X-Request-Id': requestId },
    body: { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: calleeNumber('5501'), first_name: 'Ada' } },
  });
  assert.equal(res.status, 201, res.text);
  const workflowId = callWorkflowId(res.json.call_id);
  const result = await env.client.workflow.getHandle(workflowId).result();
  assert.equal(result.status, 'completed');

  const spans = await spansOnce(exporter, inRequestTrace('RunWorkflow:callWorkflow', requestId));
  const http = requestSpan(spans, requestId);
  assert.ok(http, 'the HTTP span carries the request id');
  assert.equal(http.parentSpanId, undefined, 'the HTTP span is the root');
  assert.equal(http.attributes['http.route'], '/api/v1/create-phone-call');
  assert.equal(http.name, 'POST /api/v1/create-phone-call');
  assert.equal(http.attributes['http.status_code'], 201);
  const traceId = http.spanContext().traceId;
  const accessLine = logged
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { requestId?: string; msg?: string; traceId?: string })
    .find((line) => line.requestId === requestId && line.msg === 'request');
  assert.equal(accessLine?.traceId, traceId, 'the access log line carries the trace id');

  // The dial activity's SQL, walked up to the root one parent at a time.
  const dial = spans.filter((s) => s.name === 'RunActivity:placeCall' && s.attributes.temporalWorkflowId === workflowId);
  assert.equal(dial.length, 1, 'one dial');
  const dialSql = spans.filter((s) => s.parentSpanId === idOf(dial[0]) && s.name.startsWith('pg.query'));
  assert.ok(dialSql.length > 0, 'the dial activity ran SQL');
  for (const sql of dialSql) {
    assert.equal(sql.attributes['db.system'], 'postgresql');
    assert.match(String(sql.attributes['db.statement']), /\b(SELECT|INSERT|UPDATE)\b/i);
    assert.doesNotMatch(String(sql.attributes['db.statement']), new RegExp(res.json.call_id), 'statement parameters stay out of spans');
  }
  const chain = ancestry(dialSql[0], spans).map((s) => s.name);
  assert.deepEqual(chain, ['RunActivity:placeCall', 'StartActivity:placeCall', 'RunWorkflow:callWorkflow', 'StartWorkflow:callWorkflow', 'POST /api/v1/create-phone-call']);
  assert.equal(ancestry(dialSql[0], spans).at(-1), http);

  // One trace: every span of the call's workflow and activities is in the HTTP span's trace.
  const ofCall = spans.filter((s) => s.attributes.temporalWorkflowId === workflowId);
  assert.ok(ofCall.length >= 5, `the call's spans: ${ofCall.map((s) => s.name).join(', ')}`);
  assert.deepEqual([...new Set(ofCall.map((s) => s.spanContext().traceId))], [traceId]);
  // ...and the SQL the request itself ran (the call's row) hangs under the HTTP span.
  assert.ok(spans.some((s) => s.parentSpanId === idOf(http) && s.attributes['db.system'] === 'postgresql'), 'the request ran SQL under its span');
});

test('a request that signals a workflow: the HTTP span → SignalWorkflow → HandleSignal in the workflow, one trace', async () => {
  const team = await createTestTeam(api.pool);
  const created = await api.request('POST', '/api/v1/create-phone-call', {
    key: team.apiKey,
    body: { from_number: team.fromNumber, script_id: team.scriptId, scheduled_time: '2030-05-01T10:00:00Z', contact: { phone_number: calleeNumber('5502') } },
  });
  assert.equal(created.status, 201, created.text);
  const workflowId = callWorkflowId(created.json.call_id);
  const requestId = `trace-cancel-${Date.now()}`;
  const cancelled = await api.request('POST', `/api/v1/cancel-call/${created.json.call_id}`, { key: team.apiKey, headers: { 'X-Request-Id': requestId } });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.equal((await env.client.workflow.getHandle(workflowId).result()).status, 'cancelled');

  const spans = await spansOnce(exporter, inRequestTrace('HandleSignal:cancelCall', requestId));
  const http = requestSpan(spans, requestId);
  assert.ok(http, 'the HTTP span of the cancel request');
  const handled = spans.filter((s) => s.name === 'HandleSignal:cancelCall' && s.spanContext().traceId === http.spanContext().traceId);
  assert.equal(handled.length, 1, 'the workflow handled the signal in the trace of the request');
  assert.deepEqual(
    ancestry(handled[0], spans).map((s) => s.name),
    ['SignalWorkflow:cancelCall', 'POST /api/v1/cancel-call/{call_id}'],
  );
});

test('the recorded workflow histories replay with the tracing interceptors in the bundle', async () => {
  const histories = ['callHistories', 'batchHistories', 'webSessionHistories', 'histories'].flatMap((dir) =>
    readdirSync(path.join(WORKFLOWS_TESTS, dir))
      .filter((f) => f.endsWith('.bin'))
      .map((file) => ({ workflowId: file, history: History.decode(readFileSync(path.join(WORKFLOWS_TESTS, dir, file))) })),
  );
  assert.ok(histories.length >= 15, `recorded histories: ${histories.length}`);
  const bundle = await workflowBundle();
  assert.match(bundle.code, /interceptors-opentelemetry/, 'the bundle holds the workflow interceptors');
  // One replay worker for them all.
  const failed: string[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle: bundle, ...tracedWorkerOptions() }, histories)) {
    if (result.error) failed.push(`${result.workflowId}: ${result.error.message}`);
  }
  assert.deepEqual(failed, []);
});
