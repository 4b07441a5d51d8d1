// Traces from the API request to the SQL of the activities (docs/observability.md, "Traces"):
// the real Koa app, a call worker made by the production createWorker (the traced workflow
// bundle, the activity interceptors, the workflows' span sink), a Temporal client with the
// tracing interceptors, on a time-skipping server, with an in-memory span exporter. One
// create-phone-call (simulator) is one trace whose parent chain runs from the HTTP span to
// the SQL of the dial activity. The recorded workflow histories replay with the interceptors
// in the bundle (they add no commands).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createLogger } from '../../src/logging/logger.js';
import { createWorker, workflowBundle } from '../../src/temporal/worker.js';
import { installTracing, shutdownTracing, temporalClientInterceptors, tracedWorkerOptions } from '../../src/tracing/tracing.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi } from '../support/app.js';
import { calleeNumber, callTestConfig } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const { History } = proto.temporal.api.history.v1;
const WORKFLOWS_TESTS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'workflows');

const exporter = new InMemorySpanExporter();
let env: TestWorkflowEnvironment;
let api: TestApi;
let worker: Worker;
let running: Promise<void>;
/** The API's log lines. */
let logged = '';

before(async () => {
  // First: the client, the bundle and the workers pick tracing up when they are made.
  assert.equal(await installTracing({ config: {}, serviceName: 'trace-test', spanProcessor: new SimpleSpanProcessor(exporter) }), true);
  env = await createTimeSkippingEnv();
  const traced = new Client({ connection: env.connection, interceptors: temporalClientInterceptors() });
  const config = callTestConfig();
  const logStream = new Writable({
    write(chunk, _enc, done) {
      logged += String(chunk);
      done();
    },
  });
  api = await startTestApi({ temporal: traced, logger: createLogger('info', logStream), config: { TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE, SIMULATOR_CALL_SECONDS: '3', DIAL_RATE_PER_NUMBER: '1000' } });
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

const idOf = (s: ReadableSpan) => s.spanContext().spanId;

/** The span's ancestors, nearest first, as far as the exported spans reach. */
function ancestry(span: ReadableSpan, spans: ReadableSpan[]): ReadableSpan[] {
  const chain: ReadableSpan[] = [];
  let parentId = span.parentSpanId;
  while (parentId) {
    const parent = spans.find((s) => idOf(s) === parentId);
    assert.ok(parent, `the parent ${parentId} of ${chain.at(-1)?.name ?? span.name} was exported`);
    chain.push(parent);
    parentId = parent.parentSpanId;
  }
  return chain;
}

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
  // Awaited through the environment's client: time skips past the simulated call and the analysis delay.
  const result = await env.client.workflow.getHandle(workflowId).result();
  assert.equal(result.status, 'completed');

  const spans = exporter.getFinishedSpans();
  const http = spans.find((s) => s.attributes['request.id'] === requestId);
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
