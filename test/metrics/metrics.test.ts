// GET /metrics of the API, the worker, the media edge and the Temporal SDK, after real traffic
// (docs/observability.md): the real API over Postgres, a call worker with the simulator and a
// Temporal dev server, the media edge's SIP-over-WebSocket server asking the real API, each
// part's listener started the way its process starts it (servePartMetrics, the Temporal
// runtime's Prometheus exporter). Every family the issue names is declared where it should be,
// and the counters and gauges the traffic touches move, with bounded labels.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { freePort } from '../../src/localPorts.js';
import { createLogger } from '../../src/logging/logger.js';
import { loadMediaEdgeConfig, startConfiguredMediaEdge, type MediaEdge } from '../../src/mediaEdge/server.js';
import { servePartMetrics, type MetricsServer } from '../../src/metrics/server.js';
import { watchDatabase } from '../../src/metrics/workerMetrics.js';
import { createHook } from '../../src/services/hooks.js';
import { hookRunWorkflowId } from '../../workflows/contracts.js';
import { createWebhookWorker, installTemporalRuntime } from '../../src/temporal/worker.js';
import { TASK_START_BUCKETS, taskStartBuckets } from '../../src/temporal/liveTaskLatency.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { callTestConfig, createCallWorker, waitForCall } from '../support/calls.js';
import { parseExposition, sampleSum, scrape, seriesNames, type Exposition } from '../support/prometheusText.js';
import { SipTestClient } from '../support/sipClient.js';
import { createLocalEnv } from '../support/temporal.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhookReceiver.js';

/** The families of issue 26, "Metrics", by the process part that serves them. */
const API_FAMILIES = [
  'voice_agent_http_requests_total',
  'voice_agent_http_request_duration_seconds',
  'voice_agent_rate_limit_rejections_total',
  'voice_agent_rate_limit_redis_fallback',
  'voice_agent_idempotent_replays_total',
  'voice_agent_idempotency_conflicts_total',
];
/** Counted where the call or the delivery happens: served by the API and by the worker. */
const CALL_FAMILIES = [
  'voice_agent_calls_created_total',
  'voice_agent_calls_ended_total',
  'voice_agent_call_start_lateness_seconds',
  'voice_agent_dial_pacing_waits_total',
  'voice_agent_call_analysis_duration_seconds',
  'voice_agent_webhook_deliveries_total',
  'voice_agent_webhook_delivery_latency_seconds',
  'voice_agent_hook_runs_total',
];
const WORKER_STATE_FAMILIES = ['voice_agent_call_slots_in_use', 'voice_agent_calls_waiting_for_slot', 'voice_agent_batches_active', 'voice_agent_batch_contacts'];
// The worker's own admission pace: its pacer's rate and its live calls' timer lateness.
const WORKER_PACE_FAMILIES = ['voice_agent_admission_rate_per_second', 'voice_agent_live_timer_lateness_seconds'];
const EDGE_FAMILIES = [
  'voice_agent_media_edge_active_calls',
  'voice_agent_media_edge_sockets',
  'voice_agent_turn_latency_seconds',
  'voice_agent_jitter_buffer_underruns_total',
  'voice_agent_jitter_buffer_late_frames_total',
  'voice_agent_speech_engine_errors_total',
  'voice_agent_speech_queue_depth',
  'voice_agent_media_edge_admission_refusals_total',
  'voice_agent_recording_upload_failures_total',
];

const SECRET = 'metrics-test-media-edge-secret-01';
const QUEUE = `metrics-${process.pid}`;

let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let webhookWorker: Worker;
let webhooksRunning: Promise<void>;
let receiver: WebhookReceiver;
let edge: MediaEdge;
let temporalMetricsUrl: string;
const listeners: Record<'api' | 'worker' | 'mediaEdge', MetricsServer> = {} as never;
let team: TestTeam;
/** A team of one slot, held by a web session: its phone call waits in line. */
let fullTeam: TestTeam;

before(async () => {
  const temporalPort = await freePort();
  temporalMetricsUrl = `http://127.0.0.1:${temporalPort}/metrics`;
  installTemporalRuntime('WARN', {
    bindAddress: `127.0.0.1:${temporalPort}`,
    onError: (err) => {
      throw err;
    },
  });
  env = await createLocalEnv();
  const edgePort = await freePort();
  const settings = {
    TEMPORAL_TASK_QUEUE: QUEUE,
    SIMULATOR_CALL_SECONDS: '1',
    MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${edgePort}/ws`,
    MEDIA_EDGE_SIP_DOMAIN: 'edge.test',
    MEDIA_EDGE_SECRET: SECRET,
    // Health is asked 7 times below: the 7th is refused by this bucket.
    RATE_LIMIT_PER_IP_ENDPOINT: '6',
    API_METRICS_PORT: '0',
    WORKER_METRICS_PORT: '0',
    MEDIA_EDGE_METRICS_PORT: '0',
    // The event webhook receiver is on this machine.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  } as const;
  app = await startTestApi({ temporal: env.client, config: settings });
  const config = callTestConfig(settings);
  worker = await createCallWorker(env, app.pool, config);
  running = worker.run();
  webhookWorker = await createWebhookWorker({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: QUEUE, deps: { config, pool: app.pool, logger: createLogger('silent'), temporal: env.client } });
  webhooksRunning = webhookWorker.run();
  receiver = await startWebhookReceiver(200);
  edge = await startConfiguredMediaEdge(loadMediaEdgeConfig({ MEDIA_EDGE_WS_URL: settings.MEDIA_EDGE_WS_URL, MEDIA_EDGE_SECRET: SECRET, API_URL: app.url, LOG_LEVEL: 'silent' }), createLogger('silent'));
  const logger = createLogger('silent');
  watchDatabase(app.pool);
  for (const part of ['api', 'worker', 'mediaEdge'] as const) {
    const server = await servePartMetrics(part, config, logger);
    assert.ok(server, `${part} metrics listener`);
    listeners[part] = server;
  }
  team = await createTestTeam(app.pool);
  fullTeam = await createTestTeam(app.pool, { maxConcurrent: 1 });
});

after(async () => {
  for (const server of Object.values(listeners)) await server?.close();
  await edge?.close();
  worker?.shutdown();
  webhookWorker?.shutdown();
  await running;
  await webhooksRunning;
  await receiver?.close();
  await app?.close();
  await env?.teardown();
});

function assertFamilies(exposition: Exposition, families: string[], where: string): void {
  const missing = families.filter((name) => !exposition.types.has(name));
  assert.deepEqual(missing, [], `${where} /metrics lacks ${missing.join(', ')}`);
}

/** An hour ahead: the call stays scheduled while this file runs (its end would count in the worker's test). */
const LATER = new Date(Date.now() + 3_600_000).toISOString();

async function createPhoneCall(from: TestTeam, lastFour: string, opts: { headers?: Record<string, string>; firstName?: string; scheduledTime?: string } = {}) {
  return app.request('POST', '/api/v1/create-phone-call', {
    key: from.apiKey,
    headers: opts.headers ?? {},
    body: {
      from_number: from.fromNumber,
      script_id: from.scriptId,
      contact: { phone_number: `+1415555${lastFour}`, first_name: opts.firstName ?? 'Ada' },
      ...(opts.scheduledTime ? { scheduled_time: opts.scheduledTime } : {}),
    },
  });
}

test('the API /metrics counts requests by route template, rate-limit rejections by bucket, idempotent replays and conflicts', async () => {
  const before = await scrape(listeners.api.url);
  assertFamilies(before, [...API_FAMILIES, ...CALL_FAMILIES], 'the API');

  const keyed = { headers: { 'Idempotency-Key': 'metrics-key-1' }, scheduledTime: LATER };
  const created = await createPhoneCall(team, '0100', keyed);
  assert.equal(created.status, 201, created.text);
  const callId = created.json.call_id as string;
  const replayed = await createPhoneCall(team, '0100', keyed);
  assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
  assert.equal((await createPhoneCall(team, '0100', { ...keyed, firstName: 'Grace' })).status, 422);
  assert.equal((await app.request('GET', `/api/v1/get-call-status/${callId}`, { key: team.apiKey })).status, 200);
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await app.request('GET', '/api/v1/health')).status);
  assert.equal(statuses.at(-1), 429);
  assert.equal((await app.request('GET', `/api/v1/no-such-route/${callId}`)).status, 404);

  const now = await scrape(listeners.api.url);
  const delta = (name: string, labels: Record<string, string> = {}) => sampleSum(now, name, labels) - sampleSum(before, name, labels);
  assert.equal(delta('voice_agent_http_requests_total', { method: 'POST', route: '/api/v1/create-phone-call', status: '201' }), 2, 'the first create and its replay');
  assert.equal(delta('voice_agent_http_requests_total', { method: 'GET', route: '/api/v1/get-call-status/{call_id}', status: '200' }), 1);
  assert.equal(delta('voice_agent_http_requests_total', { method: 'GET', route: '/api/v1/health', status: '429' }), 1);
  assert.equal(delta('voice_agent_http_requests_total', { route: 'unmatched', status: '404' }), 1);
  assert.equal(delta('voice_agent_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/get-call-status/{call_id}' }), 1);
  assert.equal(delta('voice_agent_rate_limit_rejections_total', { bucket: 'ipEndpoint' }), 1);
  assert.equal(delta('voice_agent_idempotent_replays_total', { route: '/api/v1/create-phone-call' }), 1);
  assert.equal(delta('voice_agent_idempotency_conflicts_total', { route: '/api/v1/create-phone-call', reason: 'different_request' }), 1);
  assert.equal(delta('voice_agent_calls_created_total', { type: 'outbound' }), 1, 'the replay created nothing');
  assert.equal(sampleSum(now, 'voice_agent_rate_limit_redis_fallback'), 0, 'no Redis configured: nothing to fall back from');
  // Labels are templates, never paths: no call id appears in any label.
  assert.ok(!now.samples.some((s) => Object.values(s.labels).some((v) => v.includes(callId))), 'a call id in a label');
});

test('the worker /metrics counts calls ended, their start lateness and analysis, event webhook attempts, and shows slots in use and calls waiting per team', async () => {
  const before = await scrape(listeners.worker.url);
  assertFamilies(before, [...WORKER_STATE_FAMILIES, ...WORKER_PACE_FAMILIES, ...CALL_FAMILIES], 'the worker');
  assertFamilies(before, ['voice_agent_batch_contacts'], 'the worker');
  assert.deepEqual(
    before.samples.filter((s) => s.name === 'voice_agent_batch_contacts').map((s) => s.labels.state).sort(),
    ['calling', 'done', 'pending', 'skipped'],
  );

  const endpoint = await app.request('POST', '/api/v1/webhook-endpoints', { key: team.apiKey, body: { url: receiver.url } });
  assert.equal(endpoint.status, 201, endpoint.text);
  const created = await createPhoneCall(team, '0101');
  assert.equal(created.status, 201, created.text);
  const ended = await waitForCall(app.pool, created.json.call_id, (c) => c.progress === 'done' && c.status !== 'in-progress', 60_000);
  await receiver.waitFor((got) => got.some((r) => r.json?.type === 'call.ended'), 60_000, 'the call.ended event');

  // One slot, held by a web session; the team's phone call waits in line for it.
  const session = await app.request('POST', '/api/v1/create-web-session', { key: fullTeam.apiKey, body: { script_id: fullTeam.scriptId } });
  assert.equal(session.status, 201, session.text);
  const waiting = await createPhoneCall(fullTeam, '0102');
  assert.equal(waiting.status, 201, waiting.text);
  await waitForCall(app.pool, waiting.json.call_id, (c) => c.progress === 'waiting_for_slot', 60_000);

  const now = await scrape(listeners.worker.url);
  const delta = (name: string, labels: Record<string, string> = {}) => sampleSum(now, name, labels) - sampleSum(before, name, labels);
  assert.equal(delta('voice_agent_calls_ended_total', { status: ended.status, end_reason: ended.end_reason ?? 'none' }), 1);
  assert.ok(delta('voice_agent_call_start_lateness_seconds_count') >= 1);
  assert.equal(delta('voice_agent_call_analysis_duration_seconds_count'), 1);
  assert.ok(delta('voice_agent_webhook_deliveries_total', { outcome: 'succeeded' }) >= 1, 'the events the receiver answered 200');
  assert.equal(delta('voice_agent_webhook_delivery_latency_seconds_count'), delta('voice_agent_webhook_deliveries_total'));
  assert.equal(sampleSum(now, 'voice_agent_call_slots_in_use', { team_id: fullTeam.teamId }), 1, 'the web session holds the one slot');
  assert.equal(sampleSum(now, 'voice_agent_calls_waiting_for_slot', { team_id: fullTeam.teamId }), 1);
  assert.equal(sampleSum(now, 'voice_agent_calls_waiting_for_slot', { team_id: team.teamId }), 0, 'a team with none waiting is absent');
});

test('the media edge /metrics shows its open sockets and counts admission refusals by reason', async () => {
  const before = await scrape(listeners.mediaEdge.url);
  assertFamilies(before, EDGE_FAMILIES, 'the media edge');
  assert.deepEqual([...before.types.keys()].filter((name) => API_FAMILIES.includes(name)), [], 'the edge serves no API families');

  const client = await SipTestClient.connect(edge.url);
  try {
    const refused = client.invite();
    assert.equal((await client.finalResponse(refused.invite)).status, 403, 'no session token');
    const now = await scrape(listeners.mediaEdge.url);
    assert.equal(sampleSum(now, 'voice_agent_media_edge_sockets'), 1);
    assert.equal(sampleSum(now, 'voice_agent_media_edge_admission_refusals_total', { reason: 'invalid_token' }) - sampleSum(before, 'voice_agent_media_edge_admission_refusals_total', { reason: 'invalid_token' }), 1);
  } finally {
    await client.close();
  }
});

test('the worker /metrics counts hook runs by outcome', async () => {
  const hookTeam = await createTestTeam(app.pool);
  const hook = await createHook(app.pool, { teamId: hookTeam.teamId, secret: null, automation: { kind: 'schedule_call', script_id: hookTeam.scriptId, from_number: hookTeam.fromNumber } });
  const before = await scrape(listeners.worker.url);
  const trigger = async (body: unknown) => {
    const res = await app.request('POST', hook.path, { body });
    assert.equal(res.status, 202, res.text);
    return env.client.workflow.getHandle(hookRunWorkflowId(res.json.run_id as string)).result();
  };
  await trigger({ phone: '+14155550103', first_name: 'Lin' });
  await assert.rejects(trigger({ phone: 'unknown' }), 'a body without a usable number fails its run');
  const now = await scrape(listeners.worker.url);
  const delta = (outcome: string) => sampleSum(now, 'voice_agent_hook_runs_total', { outcome }) - sampleSum(before, 'voice_agent_hook_runs_total', { outcome });
  assert.deepEqual([delta('call_scheduled'), delta('failed'), delta('contact_added')], [1, 1, 0]);
});

test("the Temporal SDK's worker metrics are served on their own port in Prometheus names", async () => {
  const temporal = await scrape(temporalMetricsUrl);
  const names = [...temporal.types.keys()];
  assert.ok(names.length > 0 && names.every((name) => name.startsWith('temporal_')), names.join(', '));
  assert.ok(names.some((name) => name.endsWith('_total')), 'counters end in _total');
  assert.ok(names.some((name) => name.endsWith('_seconds')), 'durations are in seconds');
  assert.ok(sampleSum(temporal, 'temporal_workflow_completed_total', { task_queue: QUEUE }) >= 1, 'the calls above completed workflows on the test queue');
});

test("the workflow tasks' wait to start is served with the buckets the live calls' pace is read from, and reads back per queue", async () => {
  const buckets = taskStartBuckets(await (await fetch(temporalMetricsUrl)).text(), QUEUE);
  assert.deepEqual([...buckets.keys()], [...TASK_START_BUCKETS.workflow_task_schedule_to_start_latency.map((seconds) => seconds * 1000), Infinity]);
  assert.ok((buckets.get(Infinity) ?? 0) >= 1, "the test queue's workflow tasks are counted");
});

test('every metric the Grafana dashboard queries is one the service exports', async () => {
  const exported = new Set<string>();
  for (const url of [listeners.api.url, listeners.worker.url, listeners.mediaEdge.url, temporalMetricsUrl]) {
    for (const name of seriesNames(await scrape(url))) exported.add(name);
  }
  const dashboard = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'deploy', 'grafana', 'dashboards', 'voice-agent.json'), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
  const queried = new Set<string>();
  for (const panel of dashboard.panels) {
    for (const target of panel.targets ?? []) {
      // Metric names: identifiers that are not PromQL functions, keywords or label names.
      for (const [name] of target.expr.replace(/\{[^}]*\}/g, '').replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '').matchAll(/\b(voice_agent|temporal)_[a-z0-9_]+\b/g)) queried.add(name);
    }
  }
  assert.ok(queried.size >= EDGE_FAMILIES.length + API_FAMILIES.length, `the dashboard queries only ${queried.size} metrics`);
  const unknown = [...queried].filter((name) => !exported.has(name));
  assert.deepEqual(unknown, [], `the dashboard queries metrics nobody exports: ${unknown.join(', ')}`);
  // And it shows every family of the issue.
  const unshown = [...API_FAMILIES, ...CALL_FAMILIES, ...WORKER_STATE_FAMILIES, ...WORKER_PACE_FAMILIES, ...EDGE_FAMILIES].filter(
    (family) => ![...queried].some((name) => name === family || name.startsWith(`${family}_`)),
  );
  assert.deepEqual(unshown, [], `the dashboard does not show ${unshown.join(', ')}`);
});

test('the exposition reader takes labels with escapes and histograms apart', () => {
  const text = '# TYPE x_seconds histogram\nx_seconds_bucket{le="0.1",route="/a/{id}"} 2\nx_seconds_count 3\n# TYPE y counter\ny{l="a\\"b"} 1\n';
  const parsed = parseExposition(text);
  assert.equal(sampleSum(parsed, 'x_seconds_bucket', { route: '/a/{id}' }), 2);
  assert.equal(sampleSum(parsed, 'y', { l: 'a"b' }), 1);
  assert.ok(seriesNames(parsed).has('x_seconds_sum'));
});
