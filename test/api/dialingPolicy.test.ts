// The dialing policy on the calls endpoints, over the real Koa app and Postgres: calling_window,
// retry_policy and contact.timezone on create-phone-call (each 400 naming its field), the
// do-not-call 409 that writes nothing, what get-call-result shows (window, zone, chain), the
// original_call_id filter, retry-call keeping the chain, and team isolation. Workflows are
// started on a time-skipping server with no worker for the call queue, so calls stay where the
// test puts them (the workflows themselves: test/workflows/dialingPolicy.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { completeCall } from '../../src/db/repositories/calls.js';
import { updateTeamDialingPolicy } from '../../src/db/repositories/dialingPolicies.js';
import type { CallingWindow } from '../../src/domain/callingWindows.js';
import type { UseCaseError } from '../../src/services/errors.js';
import { scheduleHookCall } from '../../src/services/hookAutomations.js';
import { HOOK_CALL_REJECTED_FAILURE } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { CALLS_TASK_QUEUE, calleeNumber } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let api: TestApi;

before(async () => {
  env = await createTimeSkippingEnv();
  api = await startTestApi({ temporal: env.client, config: { TEMPORAL_TASK_QUEUE: CALLS_TASK_QUEUE } });
});

after(async () => {
  await api?.close();
  await env?.teardown();
});

const weekdays: CallingWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '20:00' };
const policy = { 'rang-out': { max_attempts: 3, delay_seconds: 3600 }, voicemail: { max_attempts: 2, delay_seconds: 7200 } };

function body(team: TestTeam, overrides: Record<string, unknown> = {}) {
  return { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: calleeNumber('5678'), first_name: 'Ada' }, ...overrides };
}

async function create(team: TestTeam, overrides: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body: body(team, overrides) });
  assert.equal(res.status, 201, res.text);
  return res.json as { call_id: string; contact_id: string };
}

const result = async (team: TestTeam, callId: string) => (await api.request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey })).json.call;

describe('create-phone-call: calling_window, retry_policy, contact.timezone', () => {
  test('the call keeps its own window, zone and policy; get-call-result shows them with attempt 1 and no chain yet', async () => {
    const team = await createTestTeam(api.pool);
    const { call_id } = await create(team, {
      contact: { phone_number: calleeNumber('5679'), timezone: 'asia/tokyo' },
      calling_window: { days: ['fri', 'mon', 'wed'], start: '10:00', end: '18:30' },
      retry_policy: policy,
      scheduled_time: '2031-01-04T00:30:00Z',
    });
    const call = await result(team, call_id);
    assert.deepEqual(call.calling_window, { days: ['mon', 'wed', 'fri'], start: '10:00', end: '18:30' });
    assert.equal(call.timezone, 'Asia/Tokyo');
    assert.deepEqual(call.retry_policy, policy);
    assert.equal(call.attempt, 1);
    assert.equal(call.original_call_id, null);
    assert.equal(call.next_attempt_call_id, null);
    // Saturday 2031-01-04 09:30 in Tokyo: the call is not dialled before Monday 10:00 JST; it asked for Saturday.
    assert.equal(call.scheduled_time, '2031-01-04T00:30:00.000Z');
    const { rows } = await api.pool.query('SELECT dial_after FROM calls WHERE id = $1', [call_id]);
    assert.equal(rows[0].dial_after.toISOString(), '2031-01-06T01:00:00.000Z');
  });

  test('without overrides the team’s defaults apply; null turns them off; the zone comes from the number, else the team', async () => {
    const team = await createTestTeam(api.pool);
    await updateTeamDialingPolicy(api.pool, team.teamId, { calling_window: weekdays, timezone: 'Europe/Paris', retry_policy: policy });
    const byNumber = await result(team, (await create(team, { contact: { phone_number: calleeNumber('5680') } })).call_id);
    assert.deepEqual(byNumber.calling_window, weekdays);
    assert.equal(byNumber.timezone, 'America/Los_Angeles', 'a 415 number is in one zone');
    assert.deepEqual(byNumber.retry_policy, policy);
    const byTeam = await result(team, (await create(team, { contact: { phone_number: '+15555550142' } })).call_id);
    assert.equal(byTeam.timezone, 'Europe/Paris', 'a 555 number says nothing: the team’s default');
    const off = await result(team, (await create(team, { calling_window: null, retry_policy: null })).call_id);
    assert.equal(off.calling_window, null);
    assert.equal(off.retry_policy, null);
    const bare = await createTestTeam(api.pool);
    assert.equal((await result(bare, (await create(bare, { contact: { phone_number: '+15555550143' } })).call_id)).timezone, 'UTC');
  });

  test('400 naming the field for every invalid window, policy or zone; nothing is written', async () => {
    const team = await createTestTeam(api.pool);
    const phone = calleeNumber('5681');
    const cases: [Record<string, unknown>, string][] = [
      [{ calling_window: { days: [], start: '09:00', end: '17:00' } }, 'Invalid request: calling_window.days: must name at least one day'],
      [{ calling_window: { days: ['monday'], start: '09:00', end: '17:00' } }, 'Invalid request: calling_window.days[0]: must be one of mon, tue, wed, thu, fri, sat, sun'],
      [{ calling_window: { days: ['mon', 'mon'], start: '09:00', end: '17:00' } }, 'Invalid request: calling_window.days: must name each day at most once'],
      [{ calling_window: { days: ['mon'], start: '9:00', end: '17:00' } }, 'Invalid request: calling_window.start: must be a time HH:MM from 00:00 to 23:59'],
      [{ calling_window: { days: ['mon'], start: '09:00', end: '24:01' } }, 'Invalid request: calling_window.end: must be a time HH:MM from 00:00 to 24:00'],
      [{ calling_window: { days: ['mon'], start: '09:00', end: '09:00' } }, 'Invalid request: calling_window.end: must differ from start'],
      [{ calling_window: { days: ['mon'], start: '09:00' } }, 'Invalid request: calling_window.end is required'],
      [{ calling_window: { days: ['mon'], start: '09:00', end: '17:00', zone: 'x' } }, 'Invalid request: calling_window has unknown field zone'],
      [{ calling_window: 'weekdays' }, 'Invalid request: calling_window: expected object, received string'],
      [{ retry_policy: { completed: { max_attempts: 2, delay_seconds: 60 } } }, 'Invalid request: retry_policy has unknown field completed'],
      [{ retry_policy: { cancelled: { max_attempts: 2, delay_seconds: 60 } } }, 'Invalid request: retry_policy has unknown field cancelled'],
      [{ retry_policy: { 'rang-out': { max_attempts: 11, delay_seconds: 3600 } } }, 'Invalid request: retry_policy.rang-out.max_attempts: must be a whole number from 1 to 10'],
      [{ retry_policy: { 'rang-out': { max_attempts: 0, delay_seconds: 3600 } } }, 'Invalid request: retry_policy.rang-out.max_attempts: must be a whole number from 1 to 10'],
      [{ retry_policy: { voicemail: { max_attempts: 2, delay_seconds: 59 } } }, 'Invalid request: retry_policy.voicemail.delay_seconds: must be a whole number from 60 to 604800'],
      [{ retry_policy: { voicemail: { max_attempts: 2, delay_seconds: 604_801 } } }, 'Invalid request: retry_policy.voicemail.delay_seconds: must be a whole number from 60 to 604800'],
      [{ retry_policy: { voicemail: { max_attempts: 2 } } }, 'Invalid request: retry_policy.voicemail.delay_seconds is required'],
      [{ retry_policy: { voicemail: { max_attempts: 2.5, delay_seconds: 60 } } }, 'Invalid request: retry_policy.voicemail.max_attempts: must be a whole number from 1 to 10'],
      [{ contact: { phone_number: phone, timezone: 'Europe/Pariss' } }, 'Invalid request: contact.timezone: must be an IANA time zone such as Europe/Paris'],
      [{ contact: { phone_number: phone, timezone: '+02:00' } }, 'Invalid request: contact.timezone: must be an IANA time zone such as Europe/Paris'],
      [{ contact: { phone_number: phone, timezone: 2 } }, 'Invalid request: contact.timezone: must be an IANA time zone such as Europe/Paris'],
    ];
    for (const [overrides, message] of cases) {
      const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body: body(team, { contact: { phone_number: phone }, ...overrides }) });
      assert.equal(res.status, 400, `${JSON.stringify(overrides)}: ${res.text}`);
      assert.deepEqual(res.json, { success: false, message });
    }
    const { rows } = await api.pool.query('SELECT count(*)::int AS n FROM contacts WHERE team_id = $1', [team.teamId]);
    assert.equal(rows[0].n, 0);
  });

  test('create-contact and list additions take timezone too, 400 naming the field', async () => {
    const team = await createTestTeam(api.pool);
    const bad = await api.request('POST', '/api/v1/create-contact', { key: team.apiKey, body: { phone_number: calleeNumber('5682'), first_name: 'A', timezone: 'Nowhere/Land' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.message, 'Invalid request: timezone: must be an IANA time zone such as Europe/Paris');
    const list = await api.request('POST', '/api/v1/lists', { key: team.apiKey, body: { name: 'zones' } });
    const badList = await api.request('POST', `/api/v1/lists/${list.json.list_id}/contacts`, { key: team.apiKey, body: { contacts: [{ phone_number: calleeNumber('5683'), timezone: 'UTC+2' }] } });
    assert.equal(badList.status, 400);
    assert.equal(badList.json.message, 'Invalid request: contacts[0].timezone: must be an IANA time zone such as Europe/Paris');
    const ok = await api.request('POST', `/api/v1/lists/${list.json.list_id}/contacts`, { key: team.apiKey, body: { contacts: [{ phone_number: calleeNumber('5684'), timezone: 'Australia/Sydney' }] } });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.json.list_contacts[0].timezone, 'Australia/Sydney');
    const page = await api.request('GET', `/api/v1/lists/${list.json.list_id}`, { key: team.apiKey });
    assert.equal(page.json.list.contacts[0].timezone, 'Australia/Sydney');
  });
});

describe('the do-not-call list on create-phone-call and retry-call', () => {
  test('409 Phone number is on the do-not-call list, in any format, writing nothing: no contact, no call', async () => {
    const team = await createTestTeam(api.pool);
    const phone = calleeNumber('5685');
    await api.request('POST', '/api/v1/do-not-call', { key: team.apiKey, body: { phone_number: phone } });
    const local = `(${phone.slice(2, 5)}) ${phone.slice(5, 8)}-${phone.slice(8)}`;
    const res = await api.request('POST', '/api/v1/create-phone-call', { key: team.apiKey, body: body(team, { contact: { phone_number: local, first_name: 'Listed' } }) });
    assert.equal(res.status, 409);
    assert.deepEqual(res.json, { success: false, message: 'Phone number is on the do-not-call list' });
    const { rows } = await api.pool.query('SELECT (SELECT count(*) FROM contacts WHERE team_id = $1)::int AS contacts, (SELECT count(*) FROM calls WHERE team_id = $1)::int AS calls', [team.teamId]);
    assert.deepEqual(rows[0], { contacts: 0, calls: 0 });
    // Another team's list does not apply.
    const other = await createTestTeam(api.pool);
    assert.equal((await api.request('POST', '/api/v1/create-phone-call', { key: other.apiKey, body: body(other, { contact: { phone_number: phone } }) })).status, 201);
  });

  test('a webhook schedule_call run to a listed number is refused (HookCallRejected) and writes nothing', async () => {
    const team = await createTestTeam(api.pool);
    const phone = calleeNumber('5690');
    await api.request('POST', '/api/v1/do-not-call', { key: team.apiKey, body: { phone_number: phone } });
    const deps = { pool: api.pool, temporal: env.client, config: api.config };
    await assert.rejects(
      scheduleHookCall(deps, { runId: randomUUID(), teamId: team.teamId, scriptId: team.scriptId, fromNumber: team.fromNumber, contact: { phone_number: phone } }),
      (err: UseCaseError) => err.code === HOOK_CALL_REJECTED_FAILURE && err.message === 'The call could not be scheduled: Phone number is on the do-not-call list',
    );
    const { rows } = await api.pool.query('SELECT count(*)::int AS n FROM calls WHERE team_id = $1', [team.teamId]);
    assert.equal(rows[0].n, 0);
  });

  test('retry-call of a call whose number was listed since answers 409', async () => {
    const team = await createTestTeam(api.pool);
    const phone = calleeNumber('5686');
    const { call_id } = await create(team, { contact: { phone_number: phone } });
    await completeCall(api.pool, call_id, { status: 'rang-out', endReason: 'no_answer', endTime: new Date(), progress: 'done' });
    await api.request('POST', '/api/v1/do-not-call', { key: team.apiKey, body: { phone_number: phone } });
    const res = await api.request('POST', `/api/v1/retry-call/${call_id}`, { key: team.apiKey });
    assert.equal(res.status, 409);
    assert.equal(res.json.message, 'Phone number is on the do-not-call list');
  });
});

describe('chains: retry-call, get-call-result and the original_call_id filter', () => {
  test('a retry of a retry names the chain’s first call, counts attempts and links each call to the next', async () => {
    const team = await createTestTeam(api.pool);
    const first = await create(team, { calling_window: weekdays, retry_policy: policy, contact: { phone_number: calleeNumber('5687'), timezone: 'Europe/Paris' } });
    await completeCall(api.pool, first.call_id, { status: 'rang-out', endReason: 'no_answer', endTime: new Date(), progress: 'done' });
    const second = await api.request('POST', `/api/v1/retry-call/${first.call_id}`, { key: team.apiKey, body: { scheduled_time: '2031-01-01T00:00:00Z' } });
    assert.equal(second.status, 201, second.text);
    assert.equal(second.json.original_call_id, first.call_id);
    await completeCall(api.pool, second.json.call_id, { status: 'voicemail', endReason: 'voicemail', endTime: new Date(), progress: 'done' });
    const third = await api.request('POST', `/api/v1/retry-call/${second.json.call_id}`, { key: team.apiKey });
    assert.equal(third.json.original_call_id, first.call_id, 'the first call of the chain, not the call retried');
    const [a, b, c] = [await result(team, first.call_id), await result(team, second.json.call_id), await result(team, third.json.call_id)];
    assert.deepEqual([a.attempt, b.attempt, c.attempt], [1, 2, 3]);
    assert.deepEqual([a.original_call_id, b.original_call_id, c.original_call_id], [null, first.call_id, first.call_id]);
    assert.deepEqual([a.next_attempt_call_id, b.next_attempt_call_id, c.next_attempt_call_id], [second.json.call_id, third.json.call_id, null]);
    // The chain keeps its window, zone and policy.
    assert.deepEqual(c.calling_window, weekdays);
    assert.equal(c.timezone, 'Europe/Paris');
    assert.deepEqual(c.retry_policy, policy);

    const ids = async (query: string, key = team.apiKey) => (await api.request('GET', `/api/v1/calls${query}`, { key })).json.calls.map((x: { id: string }) => x.id);
    assert.deepEqual(await ids(`?original_call_id=${first.call_id}`), [third.json.call_id, second.json.call_id]);
    assert.deepEqual(await ids(`?original_call_id=${first.call_id}&status=voicemail`), [second.json.call_id]);
    const filtered = await api.request('GET', `/api/v1/calls?original_call_id=${first.call_id}&limit=1`, { key: team.apiKey });
    assert.equal(filtered.json.meta.total, 2);
    const malformed = await api.request('GET', '/api/v1/calls?original_call_id=abc', { key: team.apiKey });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.message, 'Invalid request: original_call_id must be a UUID');
    const other = await createTestTeam(api.pool);
    assert.deepEqual(await ids(`?original_call_id=${first.call_id}`, other.apiKey), [], 'another team sees none of the chain');
  });

  test('the OpenAPI document describes the new fields and the filter', async () => {
    const doc = (await api.request('GET', '/api/v1/openapi.json')).json;
    const request = doc.components.schemas.CreatePhoneCallRequest.properties;
    assert.ok(request.calling_window && request.retry_policy);
    assert.ok(doc.components.schemas.CallingWindow && doc.components.schemas.RetryPolicy);
    const callResult = doc.components.schemas.CallResult.properties;
    for (const field of ['attempt', 'original_call_id', 'next_attempt_call_id', 'calling_window', 'timezone', 'retry_policy']) assert.ok(callResult[field], field);
    assert.ok(doc.paths['/api/v1/calls'].get.parameters.some((p: { name: string }) => p.name === 'original_call_id'));
    assert.ok(doc.paths['/api/v1/create-phone-call'].post.responses['409']);
  });
});
