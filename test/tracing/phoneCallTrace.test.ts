// A phone call through the SIP trunk is one trace (docs/observability.md, "Traces"): from the
// API's create-phone-call span through the call workflow and the edge's dial activity to the
// media edge's call-event requests (ringing, answered, ended), which the edge sends with fetch
// and the call's traceparent. The real Koa app, a worker made by the production createWorker,
// the real media edge (startVoiceEdge with its trunk agent) and SIPp as the trunk
// (test/mediaEdge/sipScenarios/uas-auth-401.xml: challenges, answers, waits for our BYE), on a
// Temporal dev server, with an in-memory span exporter.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freePort } from '../../src/localPorts.js';
import { createLogger } from '../../src/logging/logger.js';
import { loadMediaEdgeConfig } from '../../src/mediaEdge/server.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { createSpeechEngines, type SpeechEngines } from '../../src/mediaEdge/speech/speechEngines.js';
import { startVoiceEdge, type VoiceEdge } from '../../src/mediaEdge/voiceEdge.js';
import { createRecordingStore } from '../../src/recordings/index.js';
import { createWorker } from '../../src/temporal/worker.js';
import { installTracing, shutdownTracing, temporalClientInterceptors } from '../../src/tracing/tracing.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { callResultOrStuck, callTestConfig } from '../support/calls.js';
import { startSipp } from '../support/sipp.js';
import { createLocalEnv } from '../support/temporal.js';

const SECRET = 'trace-phone-media-edge-secret-0123';
const CALLEE = '+14155550191';
/** Not screened for an answering machine: SIPp sends no audio, and a silent line is a machine. */
const SCRIPT = { name: 'Short call', voicemail_detection: false, steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] };

const exporter = new InMemorySpanExporter();
let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let speech: SpeechEngines;
let edge: VoiceEdge;
let team: TestTeam;
let scriptId: string;
let work: string;
let trunkPort: number;

before(async () => {
  // First: the client, the bundle and the workers pick tracing up when they are made.
  assert.equal(await installTracing({ config: {}, serviceName: 'phone-trace-test', spanProcessor: new SimpleSpanProcessor(exporter) }), true);
  work = mkdtempSync(path.join(os.tmpdir(), 'phone-trace-'));
  env = await createLocalEnv();
  const traced = new Client({ connection: env.connection, interceptors: temporalClientInterceptors() });
  const settings = {
    TEMPORAL_TASK_QUEUE: `phone-trace-${process.pid}`,
    MEDIA_EDGE_SECRET: SECRET,
    VOICE_PROVIDER: 'sip',
    RECORDINGS_STORE: 'local',
    RECORDINGS_DIR: path.join(work, 'recordings'),
    RATE_LIMITS_ENABLED: 'false',
  } as const;
  app = await startTestApi({ temporal: traced, config: settings });
  team = await createTestTeam(app.pool);
  ({ id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  const config = callTestConfig(settings);
  worker = await createWorker({ connection: env.nativeConnection, namespace: 'default', taskQueue: config.TEMPORAL_TASK_QUEUE, deps: { config, pool: app.pool, logger: createLogger('silent'), temporal: traced } });
  running = worker.run();
  speech = createSpeechEngines({});
  trunkPort = await freePort();
  edge = await startVoiceEdge({
    config: loadMediaEdgeConfig({ MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${await freePort()}/ws`, MEDIA_EDGE_SECRET: SECRET, API_URL: app.url, LOG_LEVEL: 'silent' }),
    logger: createLogger(process.env.EDGE_LOG_LEVEL ?? 'silent'),
    speech,
    recordings: createRecordingStore(config),
    temporalAddress: env.address,
    temporalNamespace: env.namespace ?? 'default',
    instanceId: `phone-trace-${process.pid}`,
    trunk: parseTrunkSettings({
      SIP_TRUNK_URI: `sip:127.0.0.1:${trunkPort};transport=udp`,
      SIP_TRUNK_USERNAME: 'alice',
      SIP_TRUNK_PASSWORD: 'secret',
      SIP_LISTEN: `127.0.0.1:${await freePort()}`,
      RTP_PORT_RANGE: '44900-44999',
    }),
  });
});

after(async () => {
  await edge?.close();
  worker?.shutdown();
  await running;
  await speech?.close();
  await app?.close();
  await env?.teardown();
  await shutdownTracing();
  if (work) rmSync(work, { recursive: true, force: true });
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

test("a phone call through the trunk is one trace: create-phone-call → workflow → the edge's dial activity → its call-event requests", async () => {
  const sipp = await startSipp({ scenario: 'test/mediaEdge/sipScenarios/uas-auth-401.xml', port: trunkPort });
  try {
    const requestId = `phone-trace-${Date.now()}`;
    const res = await app.request('POST', '/api/v1/create-phone-call', {
      key: team.apiKey,
      headers: { 'X-Request-Id': requestId },
      body: { from_number: team.fromNumber, script_id: scriptId, contact: { phone_number: CALLEE, first_name: 'Ada' } },
    });
    assert.equal(res.status, 201, res.text);
    const callId: string = res.json.call_id;
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 60_000), { callId, status: 'completed', endReason: 'agent_hangup' });
    assert.equal((await sipp.done).code, 0);

    const eventsRoute = '/internal/v1/calls/{call_id}/events';
    const isEvent = (s: ReadableSpan) => s.attributes['http.route'] === eventsRoute && String(s.attributes['http.target'] ?? s.attributes['url.path'] ?? '').includes(callId);
    let spans: ReadableSpan[] = [];
    for (let waited = 0; waited < 10_000; waited += 50) {
      spans = exporter.getFinishedSpans();
      if (spans.filter(isEvent).length >= 2 && spans.some((s) => s.name === 'RunWorkflow:callWorkflow' && s.attributes.temporalWorkflowId === callWorkflowId(callId))) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const http = spans.find((s) => s.attributes['request.id'] === requestId);
    assert.ok(http, 'the create-phone-call span');
    const traceId = http.spanContext().traceId;

    // The edge's event requests (answered at least; ringing when the trunk sent 180): each in the call's trace, up to the create request.
    const events = spans.filter(isEvent);
    assert.ok(events.length >= 1, `the call's event requests: ${spans.map((s) => s.name).join(', ')}`);
    for (const event of events) {
      assert.equal(event.spanContext().traceId, traceId, `${event.name} is in the call's trace`);
      const chain = ancestry(event, spans).map((s) => s.name);
      assert.equal(chain.at(-1), 'POST /api/v1/create-phone-call', chain.join(' → '));
      assert.ok(chain.includes('RunWorkflow:callWorkflow') && chain.some((name) => name.startsWith('RunActivity:')), chain.join(' → '));
    }
    // The dial claim too: the edge's first request for the call.
    const claims = spans.filter((s) => s.attributes['http.route'] === '/internal/v1/calls/{call_id}/dial-claim');
    assert.ok(claims.length >= 1 && claims.every((s) => s.spanContext().traceId === traceId), 'the dial claim is in the trace');
  } finally {
    await sipp.stop();
  }
});
