// Event webhooks end to end on a Temporal dev server in real time (the time-skipping server
// would skip the very delays and restarts under test): the real API and Postgres, the
// service's two workers (its task queue and the webhook queue) with every real activity,
// and receivers that are real local HTTP servers. Every request is checked with a
// Standard Webhooks verifier written from the specification (test/support/webhookReceiver.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { Config } from '../../src/config/index.js';
import { addContactsToList, insertList } from '../../src/db/repositories/lists.js';
import { insertWebSession } from '../../src/db/repositories/webSessions.js';
import { createLogger } from '../../src/logging/logger.js';
import { createBatch } from '../../src/services/batches.js';
import { scheduleCall } from '../../src/services/calls.js';
import { createHook } from '../../src/services/hooks.js';
import { hookRunFailedEvent, recordWebhookEvents, sweepWebhookDeliveries, withWebhookEvents } from '../../src/services/webhookEvents.js';
import { startWebSessionWorkflow } from '../../src/services/webSessions.js';
import { createWebhookWorker, createWorker } from '../../src/temporal/worker.js';
import { webhookDeliveryWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, testConfig, type TestApi, type TestTeam } from '../support/app.js';
import { calleeNumber } from '../support/calls.js';
import { createLocalEnv } from '../support/temporal.js';
import { startWebhookReceiver, verifyStandardWebhook, type ReceivedWebhook, type WebhookReceiver } from '../support/webhookReceiver.js';

const MEDIA_EDGE_SECRET = 'test-media-edge-secret-0123456789';
const SETTINGS = {
  SIMULATOR_CALL_SECONDS: '1',
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1,1',
  BATCH_POLL_SECONDS: '0.5',
  RATE_LIMITS_ENABLED: 'false',
  MEDIA_EDGE_WS_URL: 'wss://edge.test/ws',
  MEDIA_EDGE_SIP_DOMAIN: 'edge.test',
  MEDIA_EDGE_SECRET,
} as const;

let env: TestWorkflowEnvironment;
let app: TestApi;
let config: Config;
let workers: ServiceWorkers;
const receivers: WebhookReceiver[] = [];

interface ServiceWorkers {
  stop(): Promise<void>;
}

/** The service's two workers (its task queue and the webhook queue), as startServiceWorker runs them. */
async function startWorkers(queueConfig: Config): Promise<ServiceWorkers> {
  const deps = { config: queueConfig, pool: app.pool, logger: createLogger('silent'), temporal: env.client };
  const queue = { connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: queueConfig.TEMPORAL_TASK_QUEUE, deps };
  const started: Worker[] = [await createWorker(queue), await createWebhookWorker(queue)];
  const runs = started.map((w) => w.run());
  return {
    async stop() {
      for (const w of started) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(runs);
    },
  };
}

before(async () => {
  env = await createLocalEnv();
  app = await startTestApi({ temporal: env.client, config: { TEMPORAL_TASK_QUEUE: `event-webhooks-${randomUUID()}`, ...SETTINGS } });
  config = app.config;
  workers = await startWorkers(config);
});

after(async () => {
  await workers?.stop();
  for (const r of receivers) await r.close();
  await app?.close();
  await env?.teardown();
});

async function receiver(answer: Parameters<typeof startWebhookReceiver>[0] = 200): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver(answer);
  receivers.push(r);
  return r;
}

const request = (team: TestTeam, method: string, path: string, body?: unknown) => app.request(method, path, { key: team.apiKey, body });

async function endpoint(team: TestTeam, url: string, events?: string[]): Promise<{ id: string; secret: string }> {
  const res = await request(team, 'POST', '/api/v1/webhook-endpoints', { url, ...(events ? { events } : {}) });
  assert.equal(res.status, 201, res.text);
  return { id: res.json.endpoint.id, secret: res.json.secret };
}

/** Every request must verify under `secret` and carry its event id as webhook-id. */
function assertSigned(requests: ReceivedWebhook[], secret: string): void {
  for (const r of requests) {
    assert.ok(verifyStandardWebhook(secret, r.headers, r.body), `signature of ${r.json?.type}`);
    assert.equal(r.headers['webhook-id'], r.json.id);
    assert.equal(r.headers['content-type'], 'application/json');
  }
}

const forCall = (r: WebhookReceiver, callId: string) => r.received.filter((x) => x.json?.data?.call?.id === callId);

/** Polls until `check` is true. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A hook_run.failed event of the team, recorded and dispatched as the worker does. */
async function fireEvent(team: TestTeam): Promise<string> {
  const runId = randomUUID();
  await withWebhookEvents({ pool: app.pool, temporal: env.client, config }, async () => ({
    result: undefined,
    events: [hookRunFailedEvent({ runId, hookId: randomUUID(), teamId: team.teamId, error: 'for the test' })],
  }));
  return runId;
}

const deliveriesOf = async (team: TestTeam, query = '') => (await request(team, 'GET', `/api/v1/webhook-deliveries${query}`)).json.deliveries as any[];

describe('call events', () => {
  test('a call sends call.scheduled, call.started, call.ended and call.analyzed, once each, signed, with data.call in the get-call-result shape', async () => {
    const team = await createTestTeam(app.pool);
    const all = await receiver();
    const endedOnly = await receiver();
    const allEndpoint = await endpoint(team, all.url);
    const endedEndpoint = await endpoint(team, endedOnly.url, ['call.ended']);

    const created = await request(team, 'POST', '/api/v1/create-phone-call', {
      from_number: team.fromNumber,
      script_id: team.scriptId,
      contact: { phone_number: calleeNumber('2718'), first_name: 'Ada' },
    });
    assert.equal(created.status, 201, created.text);
    const callId: string = created.json.call_id;

    await all.waitFor(() => forCall(all, callId).some((r) => r.json.type === 'call.analyzed'), 60_000, 'call.analyzed');
    const received = forCall(all, callId);
    assert.deepEqual(received.map((r) => r.json.type).sort(), ['call.analyzed', 'call.ended', 'call.scheduled', 'call.started']);
    assertSigned(received, allEndpoint.secret);
    // Ordering is not promised; created_at and the call's status give it.
    const ordered = [...received].sort((a, b) => Date.parse(a.json.created_at) - Date.parse(b.json.created_at));
    assert.deepEqual(ordered.map((r) => r.json.type), ['call.scheduled', 'call.started', 'call.ended', 'call.analyzed']);
    const byType = Object.fromEntries(received.map((r) => [r.json.type, r.json]));
    assert.deepEqual([byType['call.scheduled'].data.call.status, byType['call.started'].data.call.status], ['scheduled', 'in-progress']);
    assert.deepEqual([byType['call.ended'].data.call.status, byType['call.ended'].data.call.progress, byType['call.ended'].data.call.call_summary], ['completed', 'analysing', '']);
    const result = await request(team, 'GET', `/api/v1/get-call-result/${callId}`);
    assert.deepEqual(byType['call.analyzed'].data.call, result.json.call, 'call.analyzed carries the final get-call-result');
    assert.ok(byType['call.analyzed'].data.call.call_summary.length > 0);
    assert.ok(byType['call.analyzed'].data.call.transcript.length > 0);

    await endedOnly.waitFor(() => forCall(endedOnly, callId).length >= 1, 10_000, 'call.ended on the filtered endpoint');
    assert.deepEqual(forCall(endedOnly, callId).map((r) => r.json.type), ['call.ended']);
    assertSigned(forCall(endedOnly, callId), endedEndpoint.secret);
    assert.equal(forCall(endedOnly, callId)[0].json.id, byType['call.ended'].id, 'one id per event, whichever endpoint receives it');

    const deliveries = await eventually(
      () => deliveriesOf(team, `?call_id=${callId}`),
      (list) => list.length === 5 && list.every((d) => d.status === 'succeeded'),
      'five succeeded deliveries',
    );
    assert.ok(deliveries.every((d) => d.attempts === 1 && d.last_status_code === 200 && d.delivered_at));
    const detail = (await request(team, 'GET', `/api/v1/webhook-deliveries/${deliveries[0].id}`)).json.delivery;
    assert.equal(detail.attempt_log.length, 1);
    assert.deepEqual([detail.attempt_log[0].attempt, detail.attempt_log[0].status_code, detail.attempt_log[0].error], [1, 200, null]);
    assert.equal(typeof detail.attempt_log[0].latency_ms, 'number');
  });

  test('cancel-call sends call.ended with status cancelled, and no call.started', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    await endpoint(team, r.url);
    const created = await request(team, 'POST', '/api/v1/create-phone-call', {
      from_number: team.fromNumber,
      script_id: team.scriptId,
      contact: { phone_number: calleeNumber('2719') },
      scheduled_time: '2035-01-01T00:00:00Z',
    });
    const callId: string = created.json.call_id;
    assert.equal((await request(team, 'POST', `/api/v1/cancel-call/${callId}`)).status, 200);
    await r.waitFor(() => forCall(r, callId).some((x) => x.json.type === 'call.ended'), 20_000, 'call.ended');
    const ended = forCall(r, callId).find((x) => x.json.type === 'call.ended')!;
    assert.deepEqual([ended.json.data.call.status, ended.json.data.call.end_reason], ['cancelled', 'cancelled']);
    await new Promise((res) => setTimeout(res, 500));
    assert.deepEqual(forCall(r, callId).map((x) => x.json.type).sort(), ['call.ended', 'call.scheduled']);
  });
});

describe('web session, batch and hook run events', () => {
  test('web_session.redeemed when the media edge redeems the token, with the call it made', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    const { secret } = await endpoint(team, r.url, ['web_session.redeemed', 'web_session.expired']);
    const minted = await request(team, 'POST', '/api/v1/create-web-session', { script_id: team.scriptId });
    assert.equal(minted.status, 201, minted.text);
    const redeemed = await app.request('POST', '/internal/v1/web-sessions/redeem', {
      body: { session_token: minted.json.session_token },
      headers: { Authorization: `Bearer ${MEDIA_EDGE_SECRET}` },
    });
    assert.equal(redeemed.status, 201, redeemed.text);
    const [got] = await r.waitFor((list) => list.length >= 1, 20_000, 'web_session.redeemed');
    assertSigned([got], secret);
    assert.equal(got.json.type, 'web_session.redeemed');
    assert.deepEqual(got.json.data.web_session, {
      id: minted.json.session_id,
      script_id: team.scriptId,
      contact_id: minted.json.contact_id,
      call_id: redeemed.json.call_id,
      expires_at: minted.json.expires_at,
      status: 'used',
    });
  });

  test('web_session.expired when a session nobody redeemed runs out', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    await endpoint(team, r.url, ['web_session.expired']);
    const minted = await request(team, 'POST', '/api/v1/create-web-session', { script_id: team.scriptId });
    // A second session of the same choices with a one-second life (the API's is two minutes).
    const sessionId = randomUUID();
    await insertWebSession(app.pool, {
      id: sessionId,
      teamId: team.teamId,
      tokenHash: randomUUID(),
      scriptId: team.scriptId,
      contactId: minted.json.contact_id,
      did: null,
      participantIdentity: null,
      objects: null,
      expiresAt: new Date(Date.now() + 1000),
    });
    await startWebSessionWorkflow({ temporal: env.client, config }, { sessionId, teamId: team.teamId, ttlMs: 1000 });
    const [got] = await r.waitFor((list) => list.some((x) => x.json.data.web_session.id === sessionId), 20_000, 'web_session.expired');
    assert.equal(got.json.type, 'web_session.expired');
    assert.deepEqual([got.json.data.web_session.status, got.json.data.web_session.call_id], ['expired', null]);
  });

  test('batch.completed with the batch and its progress', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    await endpoint(team, r.url, ['batch.completed']);
    const list = await insertList(app.pool, team.teamId, 'one contact');
    await addContactsToList(app.pool, team.teamId, list.id, [{ phone_number: calleeNumber('1414'), first_name: 'Grace' }]);
    const batch = await createBatch({ pool: app.pool, temporal: env.client, config }, { teamId: team.teamId, listId: list.id, scriptId: team.scriptId, fromNumber: team.fromNumber });
    const [got] = await r.waitFor((l) => l.length >= 1, 60_000, 'batch.completed');
    assert.equal(got.json.type, 'batch.completed');
    const data = got.json.data.batch;
    assert.deepEqual([data.id, data.status, data.end_reason, data.list_id], [batch.id, 'completed', 'all_called', list.id]);
    assert.deepEqual([data.progress.total, data.progress.done_total, data.progress.pending, data.progress.calling], [1, 1, 0, 0]);
  });

  test('hook_run.failed when a webhook trigger’s run fails, with the reason', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    await endpoint(team, r.url, ['hook_run.failed']);
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'schedule_call', script_id: team.scriptId, from_number: team.fromNumber } });
    const accepted = await app.request('POST', hook.path, { body: { first_name: 'Nobody' } });
    assert.equal(accepted.status, 202, accepted.text);
    const [got] = await r.waitFor((l) => l.length >= 1, 30_000, 'hook_run.failed');
    assert.equal(got.json.type, 'hook_run.failed');
    assert.deepEqual(Object.keys(got.json.data.hook_run), ['id', 'hook_id', 'status', 'error']);
    assert.deepEqual([got.json.data.hook_run.id, got.json.data.hook_run.hook_id, got.json.data.hook_run.status], [accepted.json.run_id, hook.id, 'failed']);
    assert.match(got.json.data.hook_run.error, /^Webhook body has no phone number/);
  });
});

describe('delivery', () => {
  test('retries on WEBHOOK_RETRY_SCHEDULE with the same event id and body, the delays durable timers of the workflow', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver((_req, n) => (n < 2 ? 500 : 200));
    const { secret } = await endpoint(team, r.url);
    await fireEvent(team);
    const received = await r.waitFor((l) => l.length >= 3, 30_000, 'three attempts');
    assert.equal(new Set(received.map((x) => x.headers['webhook-id'])).size, 1);
    assert.equal(new Set(received.map((x) => x.body)).size, 1);
    assertSigned(received, secret);
    assert.ok(received[1].receivedAt - received[0].receivedAt >= 900, 'a second between attempts');
    const [delivery] = await eventually(() => deliveriesOf(team), (l) => l[0]?.status === 'succeeded', 'the delivery succeeded');
    assert.equal(delivery.attempts, 3);
    const detail = (await request(team, 'GET', `/api/v1/webhook-deliveries/${delivery.id}`)).json.delivery;
    assert.deepEqual(detail.attempt_log.map((a: { status_code: number }) => a.status_code), [500, 500, 200]);
    const history = await env.client.workflow.getHandle(webhookDeliveryWorkflowId(delivery.id)).fetchHistory();
    const names = (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : e.timerStartedEventAttributes ? ['timer'] : [],
    );
    assert.deepEqual(names, ['sendWebhookDelivery', 'timer', 'sendWebhookDelivery', 'timer', 'sendWebhookDelivery']);
  });

  test('after the last attempt the delivery is failed', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver(503);
    await endpoint(team, r.url);
    await fireEvent(team);
    const [delivery] = await eventually(() => deliveriesOf(team), (l) => l[0]?.status === 'failed', 'the delivery failed', 30_000);
    assert.deepEqual([delivery.attempts, delivery.last_status_code, delivery.next_attempt_at], [3, 503, null]);
    assert.equal(r.received.length, 3);
  });

  test('a 410 disables the endpoint: no more deliveries until it is enabled again', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver(410);
    const { id } = await endpoint(team, r.url);
    await fireEvent(team);
    await eventually(() => deliveriesOf(team), (l) => l[0]?.status === 'failed', 'the delivery failed');
    const shown = (await request(team, 'GET', `/api/v1/webhook-endpoints/${id}`)).json.endpoint;
    assert.deepEqual([shown.enabled, shown.disabled_reason], [false, 'endpoint_gone']);
    assert.equal(r.received.length, 1, 'a 410 is not retried');
    await fireEvent(team);
    assert.equal((await deliveriesOf(team)).length, 1, 'a disabled endpoint gets no delivery');
    r.answer(200);
    await request(team, 'PATCH', `/api/v1/webhook-endpoints/${id}`, { enabled: true });
    await fireEvent(team);
    await r.waitFor((l) => l.length === 2, 20_000, 'the delivery after re-enabling');
  });

  test('redeliver sends the same event again: same webhook-id, same body, a fresh signature', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    const { secret } = await endpoint(team, r.url);
    await fireEvent(team);
    const [first] = await r.waitFor((l) => l.length >= 1, 20_000, 'the first delivery');
    const [delivery] = await deliveriesOf(team);
    const res = await request(team, 'POST', `/api/v1/webhook-deliveries/${delivery.id}/redeliver`);
    assert.equal(res.status, 202);
    const [, again] = await r.waitFor((l) => l.length >= 2, 20_000, 'the redelivery');
    assert.equal(again.headers['webhook-id'], first.headers['webhook-id']);
    assert.equal(again.body, first.body);
    assertSigned([again], secret);
    const redelivery = await eventually(() => request(team, 'GET', `/api/v1/webhook-deliveries/${res.json.delivery_id}`).then((x) => x.json.delivery), (d) => d.status === 'succeeded', 'the redelivery succeeded');
    assert.deepEqual([redelivery.redelivery_of, redelivery.event_id], [delivery.id, delivery.event_id]);
  });

  test('rotation: while the old secret is valid, both secrets verify the same request', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    const { id, secret: oldSecret } = await endpoint(team, r.url);
    const newSecret = (await request(team, 'POST', `/api/v1/webhook-endpoints/${id}/rotate-secret`)).json.secret;
    await fireEvent(team);
    const [got] = await r.waitFor((l) => l.length >= 1, 20_000, 'a delivery after rotation');
    assert.equal(String(got.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(verifyStandardWebhook(newSecret, got.headers, got.body));
    assert.ok(verifyStandardWebhook(oldSecret, got.headers, got.body));
  });

  test('the sweeper starts a delivery whose workflow start was lost, and fails one whose workflow is gone', async () => {
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    await endpoint(team, r.url);
    // Recorded without dispatch: as if the process died right after the commit.
    const [lost] = await recordWebhookEvents(app.pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: team.teamId, error: 'lost start' })]);
    const deps = { pool: app.pool, temporal: env.client, config };
    const report = await sweepWebhookDeliveries(deps, { startAfterMs: 0, staleAfterMs: 3_600_000 });
    assert.ok(report.started >= 1);
    await r.waitFor((l) => l.some((x) => x.json.id === lost.event_id), 20_000, 'the swept delivery');

    r.answer(500);
    await fireEvent(team);
    const [retrying] = await eventually(() => deliveriesOf(team, '?status=retrying'), (l) => l.length === 1, 'a retrying delivery');
    await env.client.workflow.getHandle(webhookDeliveryWorkflowId(retrying.id)).terminate('operator');
    await app.pool.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 hour' WHERE id = $1`, [retrying.id]);
    const swept = await sweepWebhookDeliveries(deps, { startAfterMs: 3_600_000, staleAfterMs: 60_000 });
    // Other test files share the database (not this Temporal server): their deliveries may be swept too.
    assert.ok(swept.failed >= 1, `failed ${swept.failed}`);
    const failed = (await request(team, 'GET', `/api/v1/webhook-deliveries/${retrying.id}`)).json.delivery;
    assert.deepEqual([failed.status, failed.last_error], ['failed', 'The delivery workflow no longer runs']);
  });

  test('a receiver that never answers holds its own attempts only: another endpoint’s delivery arrives meanwhile', async () => {
    const team = await createTestTeam(app.pool);
    const silent = await receiver('hang');
    const healthy = await receiver();
    await endpoint(team, silent.url);
    await endpoint(team, healthy.url);
    const started = Date.now();
    await fireEvent(team);
    await healthy.waitFor((l) => l.length >= 1, 20_000, 'the healthy endpoint');
    assert.ok(Date.now() - started < 8_000, 'well before the silent endpoint’s 10 s are up');
    await silent.waitFor((l) => l.length >= 1, 20_000, 'the silent endpoint got its request');
  });
});

describe('across a worker restart', () => {
  test('exactly one call.ended and one call.analyzed per call when the workers stop mid-call and again after the call ended', async () => {
    const queueConfig = testConfig({ TEMPORAL_TASK_QUEUE: `event-webhooks-restart-${randomUUID()}`, ...SETTINGS, SIMULATOR_CALL_SECONDS: '4' });
    const team = await createTestTeam(app.pool);
    const r = await receiver();
    await endpoint(team, r.url, ['call.ended', 'call.analyzed']);
    let restartWorkers = await startWorkers(queueConfig);
    try {
      const call = await scheduleCall({ pool: app.pool, temporal: env.client, config: queueConfig }, {
        teamId: team.teamId,
        fromNumber: team.fromNumber,
        scriptId: team.scriptId,
        contact: { phone_number: calleeNumber('8281'), first_name: 'Ada' },
      });
      const status = async () => (await app.pool.query<{ status: string }>('SELECT status FROM calls WHERE id = $1', [call.callId])).rows[0].status;
      await eventually(status, (s) => s === 'in-progress', 'the call in progress');
      await restartWorkers.stop();
      restartWorkers = await startWorkers(queueConfig);
      await eventually(status, (s) => s !== 'in-progress', 'the call ended', 90_000);
      await restartWorkers.stop();
      restartWorkers = await startWorkers(queueConfig);
      // Both, in either order: an attempt cut by the restart is sent again on the retry schedule,
      // so call.ended may arrive after call.analyzed.
      const arrived = (type: string) => forCall(r, call.callId).some((x) => x.json.type === type);
      await r.waitFor(() => arrived('call.analyzed') && arrived('call.ended'), 90_000, 'call.ended and call.analyzed');
      // Late duplicates would arrive within moments of the first.
      await new Promise((res) => setTimeout(res, 1_500));
      assert.deepEqual(forCall(r, call.callId).map((x) => x.json.type).sort(), ['call.analyzed', 'call.ended']);
      const { rows } = await app.pool.query(
        `SELECT e.type, count(DISTINCT e.id)::int AS events, count(d.id)::int AS deliveries
           FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.call_id = $1 GROUP BY e.type ORDER BY e.type`,
        [call.callId],
      );
      assert.deepEqual(rows, [
        { type: 'call.analyzed', events: 1, deliveries: 1 },
        { type: 'call.ended', events: 1, deliveries: 1 },
      ]);
    } finally {
      await restartWorkers.stop();
    }
  });
});
