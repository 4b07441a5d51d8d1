// The Calls endpoints over the real Koa app and Postgres. Workflows are started on a
// time-skipping test server with no worker for the call task queue, so calls stay where the
// test puts them; the workflow itself is tested in test/workflows/callWorkflow.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { completeCall } from '../../src/db/repositories/calls.js';
import { getOrCreateSharedWebContact } from '../../src/db/repositories/contacts.js';
import { scheduleCall } from '../../src/services/calls.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { CALLS_TASK_QUEUE, calleeNumber } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const MEDIA_EDGE_SECRET = 'test-media-edge-secret-0123456789';
let env: TestWorkflowEnvironment;
let api: TestApi;

before(async () => {
  env = await createTimeSkippingEnv();
  api = await startTestApi({ temporal: env.client, config: { TEMPORAL_TASK_QUEUE: CALLS_TASK_QUEUE, MEDIA_EDGE_SECRET } });
});

after(async () => {
  await api?.close();
  await env?.teardown();
});

function phoneCallBody(team: TestTeam, overrides: Record<string, unknown> = {}) {
  return { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: calleeNumber('1234'), first_name: 'Ada' }, ...overrides };
}

async function createCall(team: TestTeam, overrides: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body: phoneCallBody(team, overrides) });
  assert.equal(res.status, 201, res.text);
  return res.json as { call_id: string; contact_id: string; status: string };
}

describe('create-phone-call', () => {
  test('201 with call_id, contact_id and status scheduled; the row and the workflow call-<id> exist', async () => {
    const team = await createTestTeam(api.pool);
    const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body: phoneCallBody(team) });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.json).sort(), ['call_id', 'contact_id', 'status', 'success']);
    assert.equal(res.json.success, true);
    assert.equal(res.json.status, 'scheduled');
    const description = await env.client.workflow.getHandle(callWorkflowId(res.json.call_id)).describe();
    assert.equal(description.status.name, 'RUNNING');
    const { rows } = await api.pool.query('SELECT workflow_started_at, type, progress FROM calls WHERE id = $1', [res.json.call_id]);
    assert.ok(rows[0].workflow_started_at);
    assert.equal(rows[0].type, 'outbound');
  });

  test('upserts the contact by normalised number, updating first and last name when sent', async () => {
    const team = await createTestTeam(api.pool);
    const first = await createCall(team, { contact: { phone_number: '(415) 234-1234', first_name: 'Ada', last_name: 'Byron' } });
    const second = await createCall(team, { contact: { phone_number: '+14152341234', first_name: 'Augusta' } });
    assert.equal(second.contact_id, first.contact_id);
    const { rows } = await api.pool.query('SELECT phone_number, first_name, last_name FROM contacts WHERE id = $1', [first.contact_id]);
    assert.deepEqual(rows[0], { phone_number: '+14152341234', first_name: 'Augusta', last_name: 'Byron' });
    const third = await createCall(team, { contact: { phone_number: '+14152341234', last_name: 'King' } });
    assert.equal(third.contact_id, first.contact_id);
    const after = await api.pool.query('SELECT first_name, last_name FROM contacts WHERE id = $1', [first.contact_id]);
    assert.deepEqual(after.rows[0], { first_name: 'Augusta', last_name: 'King' });
  });

  test('scheduled_time defaults to now and is kept when sent', async () => {
    const team = await createTestTeam(api.pool);
    const before = Date.now();
    const now = await createCall(team);
    const later = await createCall(team, { scheduled_time: '2030-05-01T10:00:00+02:00' });
    const status = async (id: string) => (await api.request('GET', `/api/v1/get-call-status/${id}`, { key: team.apiKey })).json.call;
    const s1 = await status(now.call_id);
    assert.ok(Math.abs(Date.parse(s1.scheduled_time) - before) < 10_000);
    assert.equal((await status(later.call_id)).scheduled_time, '2030-05-01T08:00:00.000Z');
    // ISO 8601 without a zone is read as UTC; a date alone as its midnight.
    const local = await createCall(team, { scheduled_time: '2030-05-01T10:00:00' });
    assert.equal((await status(local.call_id)).scheduled_time, '2030-05-01T10:00:00.000Z');
    const day = await createCall(team, { scheduled_time: '2030-05-02' });
    assert.equal((await status(day.call_id)).scheduled_time, '2030-05-02T00:00:00.000Z');
  });

  test('null optional fields count as not sent', async () => {
    const team = await createTestTeam(api.pool);
    const phone = calleeNumber('4444');
    const first = await createCall(team, { contact: { phone_number: phone, first_name: 'Ada', last_name: 'Byron' } });
    const second = await createCall(team, { contact: { phone_number: phone, first_name: null, last_name: null, email: null }, scheduled_time: null, objects: null });
    assert.equal(second.contact_id, first.contact_id);
    const { rows } = await api.pool.query('SELECT first_name, last_name FROM contacts WHERE id = $1', [first.contact_id]);
    assert.deepEqual(rows[0], { first_name: 'Ada', last_name: 'Byron' });
  });

  const invalid: [string, Record<string, unknown> | ((t: TestTeam) => Record<string, unknown>), RegExp][] = [
    ['missing from_number', { from_number: undefined }, /from_number/],
    ['missing script_id', { script_id: undefined }, /script_id/],
    ['missing contact', { contact: undefined }, /contact/],
    ['missing contact.phone_number', { contact: { first_name: 'Ada' } }, /phone_number/],
    ['an invalid callee number', { contact: { phone_number: '12' } }, /contact\.phone_number/],
    ['an invalid from_number', { from_number: 'not a number' }, /from_number/],
    ['an invalid scheduled_time', { scheduled_time: 'tomorrow' }, /scheduled_time/],
    ['an impossible scheduled_time', { scheduled_time: '2030-02-30T10:00:00Z' }, /scheduled_time/],
    ['a scheduled_time that is not a string', { scheduled_time: 1767225600 }, /scheduled_time/],
    ['objects that are not an object map', { objects: { customer: 5 } }, /objects/],
  ];
  for (const [name, overrides, message] of invalid) {
    test(`400 for ${name}, and nothing is written`, async () => {
      const team = await createTestTeam(api.pool);
      const body = phoneCallBody(team, typeof overrides === 'function' ? overrides(team) : overrides);
      const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.success, false);
      assert.match(res.json.message, message);
      const { rows } = await api.pool.query('SELECT count(*)::int AS n FROM calls WHERE team_id = $1', [team.teamId]);
      assert.equal(rows[0].n, 0);
    });
  }

  test('404 when script_id or from_number does not exist or belongs to another team', async () => {
    const team = await createTestTeam(api.pool);
    const other = await createTestTeam(api.pool);
    for (const [overrides, message] of [
      [{ script_id: other.scriptId }, 'script_id not found or does not belong to your team'],
      [{ script_id: randomUUID() }, 'script_id not found or does not belong to your team'],
      [{ script_id: 'not-a-uuid' }, 'script_id not found or does not belong to your team'],
      [{ from_number: other.fromNumber }, 'from_number not found or does not belong to your team'],
      [{ from_number: '+12125550199' }, 'from_number not found or does not belong to your team'],
    ] as const) {
      const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body: phoneCallBody(team, overrides) });
      assert.equal(res.status, 404, `${JSON.stringify(overrides)}: ${res.text}`);
      assert.equal(res.json.message, message);
    }
  });
});

describe('get-call-status and get-call-result', () => {
  test('status answers the reduced call; result the full call with empty result fields before analysis', async () => {
    const team = await createTestTeam(api.pool);
    const { call_id, contact_id } = await createCall(team);
    const status = await api.request('GET', `/api/v1/get-call-status/${call_id}`, { key: team.apiKey });
    assert.equal(status.status, 200);
    assert.deepEqual(Object.keys(status.json.call).sort(), ['actual_time', 'duration', 'end_reason', 'end_time', 'id', 'modified_at', 'scheduled_time', 'status']);
    assert.equal(status.json.call.status, 'scheduled');
    assert.equal(status.json.call.actual_time, null);
    const result = await api.request('GET', `/api/v1/get-call-result/${call_id}`, { key: team.apiKey });
    assert.equal(result.status, 200);
    const call = result.json.call;
    assert.equal(call.id, call_id);
    assert.equal(call.contact_id, contact_id);
    assert.equal(call.team_id, team.teamId);
    assert.equal(call.type, 'outbound');
    assert.equal(call.progress, 'waiting_for_scheduled_time');
    for (const field of ['actual_time', 'end_time', 'duration', 'end_reason', 'recording_url', 'rating']) assert.equal(call[field], null, field);
    assert.equal(call.call_summary, '');
    assert.equal(call.transcript, '');
    assert.deepEqual(call.transcript_json, []);
    assert.deepEqual(call.structured_data, {});
    assert.deepEqual(call.objectives, []);
    assert.deepEqual(call.post_call_actions, []);
    assert.deepEqual(call.system_notes, []);
  });

  test('404 for an unknown, malformed or other team’s call id', async () => {
    const team = await createTestTeam(api.pool);
    const other = await createTestTeam(api.pool);
    const { call_id } = await createCall(other);
    for (const path of ['get-call-status', 'get-call-result']) {
      for (const id of [randomUUID(), 'nope', call_id]) {
        const res = await api.request('GET', `/api/v1/${path}/${id}`, { key: team.apiKey });
        assert.equal(res.status, 404, `${path}/${id}`);
        assert.deepEqual(res.json, { success: false, message: 'Call not found' });
      }
    }
  });
});

describe('GET /api/v1/calls', () => {
  test('limit: default 100; not an integer or outside 1 to 500 gives 400', async () => {
    const team = await createTestTeam(api.pool);
    const ok = await api.request('GET', '/api/v1/calls', { key: team.apiKey });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json.meta, { limit: 100, total: 0, next_cursor: null });
    for (const limit of ['0', '501', 'abc', '1.5', '-1', '']) {
      const res = await api.request('GET', `/api/v1/calls?limit=${limit}`, { key: team.apiKey });
      assert.equal(res.status, 400, `limit=${limit}`);
      assert.match(res.json.message, /limit/);
    }
    for (const limit of ['1', '500']) assert.equal((await api.request('GET', `/api/v1/calls?limit=${limit}`, { key: team.apiKey })).status, 200);
  });

  test('filters by type, status and contact_id; unknown values give 400', async () => {
    const team = await createTestTeam(api.pool);
    const a = await createCall(team, { contact: { phone_number: calleeNumber('1111'), first_name: 'A' } });
    const b = await createCall(team, { contact: { phone_number: calleeNumber('2222'), first_name: 'B' } });
    await api.request('POST', `/api/v1/cancel-call/${b.call_id}`, { key: team.apiKey });
    const web = await getOrCreateSharedWebContact(api.pool, team.teamId);
    const deps = { pool: api.pool, temporal: env.client, config: api.config };
    const w = await scheduleCall(deps, { teamId: team.teamId, scriptId: team.scriptId, contact: { id: web.id }, type: 'web' });
    const ids = async (query: string) => (await api.request('GET', `/api/v1/calls${query}`, { key: team.apiKey })).json.calls.map((c: { id: string }) => c.id);
    assert.deepEqual(await ids(''), [w.callId, b.call_id, a.call_id], 'newest first');
    assert.deepEqual(await ids('?type=web'), [w.callId]);
    assert.deepEqual(await ids('?type=outbound'), [b.call_id, a.call_id]);
    assert.deepEqual(await ids('?status=cancelled'), [b.call_id]);
    assert.deepEqual(await ids(`?contact_id=${a.contact_id}`), [a.call_id]);
    assert.deepEqual(await ids('?type=outbound&status=scheduled'), [a.call_id]);
    const filtered = await api.request('GET', '/api/v1/calls?type=outbound', { key: team.apiKey });
    assert.equal(filtered.json.meta.total, 2);
    for (const query of ['?type=fax', '?status=done', '?contact_id=nope', '?cursor=yesterday']) {
      assert.equal((await api.request('GET', `/api/v1/calls${query}`, { key: team.apiKey })).status, 400, query);
    }
  });

  test('the list shape of a call', async () => {
    const team = await createTestTeam(api.pool);
    await createCall(team);
    const res = await api.request('GET', '/api/v1/calls', { key: team.apiKey });
    assert.deepEqual(Object.keys(res.json.calls[0]).sort(), [
      'actual_time', 'call_summary', 'contact_id', 'duration', 'end_reason', 'end_time', 'id', 'objectives', 'progress',
      'recording_url', 'scheduled_time', 'script_id', 'status', 'structured_data', 'team_id', 'transcript', 'type',
    ]);
  });

  test('paging over 1,000 calls created with the same timestamp neither skips nor repeats a call', async () => {
    const team = await createTestTeam(api.pool);
    const { contact_id } = await createCall(team);
    await api.pool.query(
      `INSERT INTO calls (id, team_id, contact_id, script_id, type, from_number, to_number, scheduled_time, progress, created_at, workflow_started_at)
       SELECT gen_random_uuid(), $1, $2, $3, 'outbound', $4, '+14152340000', '2026-01-01T00:00:00Z', 'done', '2026-01-01T00:00:00Z', now()
         FROM generate_series(1, 999)`,
      [team.teamId, contact_id, team.scriptId, team.fromNumber],
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=37${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await api.request('GET', `/api/v1/calls${query}`, { key: team.apiKey });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.meta.total, 1000);
      assert.equal(res.json.meta.limit, 37);
      seen.push(...res.json.calls.map((c: { id: string }) => c.id));
      cursor = res.json.meta.next_cursor;
      if (cursor !== null) assert.ok(!Number.isNaN(Date.parse(cursor)), `next_cursor is a date-time: ${cursor}`);
      pages += 1;
    } while (cursor !== null && pages < 100);
    assert.equal(pages, Math.ceil(1000 / 37));
    assert.equal(seen.length, 1000);
    assert.equal(new Set(seen).size, 1000, 'no call repeated');
    const { rows } = await api.pool.query('SELECT count(*)::int AS n FROM calls WHERE team_id = $1 AND id = ANY($2::uuid[])', [team.teamId, seen]);
    assert.equal(rows[0].n, 1000, 'no call skipped');
  });

  test('a page that ends exactly at the last call answers next_cursor null', async () => {
    const team = await createTestTeam(api.pool);
    await createCall(team);
    await createCall(team);
    const first = await api.request('GET', '/api/v1/calls?limit=1', { key: team.apiKey });
    assert.ok(first.json.meta.next_cursor);
    const second = await api.request('GET', `/api/v1/calls?limit=1&cursor=${encodeURIComponent(first.json.meta.next_cursor)}`, { key: team.apiKey });
    assert.equal(second.json.calls.length, 1);
    assert.equal(second.json.meta.next_cursor, null);
  });
});

describe('cancel-call and retry-call', () => {
  test('cancel answers 200 while scheduled, then 409 naming the status', async () => {
    const team = await createTestTeam(api.pool);
    const { call_id } = await createCall(team, { scheduled_time: new Date(Date.now() + 3600_000).toISOString() });
    const res = await api.request('POST', `/api/v1/cancel-call/${call_id}`, { key: team.apiKey });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { success: true, call_id, status: 'cancelled' });
    const again = await api.request('POST', `/api/v1/cancel-call/${call_id}`, { key: team.apiKey });
    assert.equal(again.status, 409);
    assert.equal(again.json.message, 'Call cannot be cancelled: its status is cancelled');
    const status = await api.request('GET', `/api/v1/get-call-status/${call_id}`, { key: team.apiKey });
    assert.equal(status.json.call.status, 'cancelled');
    assert.equal(status.json.call.end_reason, 'cancelled');
    assert.equal(status.json.call.duration, 0, 'it ended without starting');
  });

  test('retry: 409 for an open or completed call, 201 for a retryable one with original_call_id, 404 for another team', async () => {
    const team = await createTestTeam(api.pool);
    const open = await createCall(team);
    let res = await api.request('POST', `/api/v1/retry-call/${open.call_id}`, { key: team.apiKey });
    assert.equal(res.status, 409);
    assert.equal(res.json.message, 'Call cannot be retried: its status is scheduled');

    const completed = await createCall(team);
    await api.pool.query(`UPDATE calls SET status = 'in-progress', actual_time = now() WHERE id = $1`, [completed.call_id]);
    await completeCall(api.pool, completed.call_id, { status: 'completed', endReason: 'agent_hangup', endTime: new Date(), progress: 'done' });
    res = await api.request('POST', `/api/v1/retry-call/${completed.call_id}`, { key: team.apiKey });
    assert.equal(res.status, 409);
    assert.equal(res.json.message, 'Call cannot be retried: its status is completed');

    const missed = await createCall(team);
    await completeCall(api.pool, missed.call_id, { status: 'rang-out', endReason: 'no_answer', endTime: new Date(), progress: 'done' });
    res = await api.request('POST', `/api/v1/retry-call/${missed.call_id}`, { key: team.apiKey, body: { scheduled_time: '2031-01-01T00:00:00Z' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.original_call_id, missed.call_id);
    assert.equal(res.json.status, 'scheduled');
    assert.equal(res.json.scheduled_time, '2031-01-01T00:00:00.000Z');
    assert.notEqual(res.json.call_id, missed.call_id);
    const retried = (await api.request('GET', `/api/v1/get-call-result/${res.json.call_id}`, { key: team.apiKey })).json.call;
    assert.equal(retried.original_call_id, missed.call_id);
    assert.equal(retried.contact_id, missed.contact_id);

    const noBody = await api.request('POST', `/api/v1/retry-call/${missed.call_id}`, { key: team.apiKey });
    assert.equal(noBody.status, 201, 'scheduled_time is optional');
    const bad = await api.request('POST', `/api/v1/retry-call/${missed.call_id}`, { key: team.apiKey, body: { scheduled_time: 'soon' } });
    assert.equal(bad.status, 400);

    const other = await createTestTeam(api.pool);
    assert.equal((await api.request('POST', `/api/v1/retry-call/${missed.call_id}`, { key: other.apiKey })).status, 404);
    assert.equal((await api.request('POST', `/api/v1/cancel-call/${open.call_id}`, { key: other.apiKey })).status, 404);
  });

  test('a web call cannot be retried (409)', async () => {
    const team = await createTestTeam(api.pool);
    const web = await getOrCreateSharedWebContact(api.pool, team.teamId);
    const deps = { pool: api.pool, temporal: env.client, config: api.config };
    const w = await scheduleCall(deps, { teamId: team.teamId, scriptId: team.scriptId, contact: { id: web.id }, type: 'web' });
    await completeCall(api.pool, w.callId, { status: 'failed', endReason: 'not_connected', endTime: new Date(), progress: 'done' });
    const res = await api.request('POST', `/api/v1/retry-call/${w.callId}`, { key: team.apiKey });
    assert.equal(res.status, 409);
    assert.equal(res.json.message, 'Call cannot be retried: it is a web call (its status is failed)');
  });
});

describe('POST /internal/v1/calls/{call_id}/events', () => {
  const edge = { Authorization: `Bearer ${MEDIA_EDGE_SECRET}` };

  test('needs the media edge secret; validates the body; 404 unknown call; 202 hands the event over; 409 once ended', async () => {
    const team = await createTestTeam(api.pool);
    const { call_id } = await createCall(team);
    const path = `/internal/v1/calls/${call_id}/events`;
    assert.equal((await api.request('POST', path, { body: { type: 'ringing' } })).status, 401);
    assert.equal((await api.request('POST', path, { body: { type: 'ringing' }, headers: { Authorization: 'Bearer wrong-secret-value-123' } })).status, 401);
    for (const body of [{}, { type: 'dialtone' }, { type: 'ended' }, { type: 'ended', reason: 'bored' }, { type: 'transcript', role: 'robot', text: 'x' }]) {
      const res = await api.request('POST', path, { body, headers: edge });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    assert.equal((await api.request('POST', `/internal/v1/calls/${randomUUID()}/events`, { body: { type: 'ringing' }, headers: edge })).status, 404);
    const ok = await api.request('POST', path, { body: { type: 'transcript', role: 'user', text: 'Hello?', event_id: 'e1' }, headers: edge });
    assert.equal(ok.status, 202, ok.text);
    assert.deepEqual(ok.json, { success: true, call_id, accepted: true, team_id: team.teamId }, 'the answer names the call\'s team (the media edge keys its recording by it)');
    await api.request('POST', `/api/v1/cancel-call/${call_id}`, { key: team.apiKey });
    const late = await api.request('POST', path, { body: { type: 'ended', reason: 'agent_hangup' }, headers: edge });
    assert.equal(late.status, 409);
    assert.equal(late.json.message, 'Call has already ended: its status is cancelled');
  });
});

describe('two teams', () => {
  test('every calls endpoint keeps teams apart', async () => {
    const a = await createTestTeam(api.pool);
    const b = await createTestTeam(api.pool);
    const callA = await createCall(a);
    const callB = await createCall(b);
    const listA = await api.request('GET', '/api/v1/calls', { key: a.apiKey });
    assert.deepEqual(listA.json.calls.map((c: { id: string }) => c.id), [callA.call_id]);
    assert.equal(listA.json.meta.total, 1);
    assert.deepEqual((await api.request('GET', `/api/v1/calls?contact_id=${callB.contact_id}`, { key: a.apiKey })).json.calls, []);
    for (const [method, path] of [
      ['GET', `/api/v1/get-call-status/${callB.call_id}`],
      ['GET', `/api/v1/get-call-result/${callB.call_id}`],
      ['POST', `/api/v1/cancel-call/${callB.call_id}`],
      ['POST', `/api/v1/retry-call/${callB.call_id}`],
    ]) {
      const res = await api.request(method, path, { key: a.apiKey });
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    const crossScript = await api.request('POST', '/api/v1/create-phone-call', { key: a.apiKey, body: phoneCallBody(a, { script_id: b.scriptId }) });
    assert.equal(crossScript.status, 404);
    const crossNumber = await api.request('POST', '/api/v1/create-phone-call', { key: a.apiKey, body: phoneCallBody(a, { from_number: b.fromNumber }) });
    assert.equal(crossNumber.status, 404);
    const statusB = await api.request('GET', `/api/v1/get-call-status/${callB.call_id}`, { key: b.apiKey });
    assert.equal(statusB.json.call.status, 'scheduled', 'B’s call untouched by A’s attempts');
  });
});
