// POST /internal/v1/inbound-calls (docs/telephony.md, "Inbound calls") through the real Koa
// app over Postgres, with a Temporal time-skipping environment (no worker: the call workflow
// is only started here; test/workflows/inboundCallWorkflow.test.ts runs it). Also the list
// filter GET /api/v1/calls?type=inbound.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { completeCall } from '../../src/db/repositories/calls.js';
import { countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import { upsertContactByPhone } from '../../src/db/repositories/contacts.js';
import { insertWebhookEndpoint } from '../../src/db/repositories/webhookEndpoints.js';
import { addTeamNumber } from '../../src/services/phoneNumbers.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const SECRET = 'media-edge-secret-for-inbound-tests';

let env: TestWorkflowEnvironment;
let app: TestApi;
let numberSeq = 0;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, config: { TEMPORAL_TASK_QUEUE: 'inbound-calls-api', RATE_LIMITS_ENABLED: 'false', MEDIA_EDGE_SECRET: SECRET } });
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

/** A number no other test uses (a number belongs to at most one team that takes its calls). */
const freshNumber = () => `+1415${String(process.pid % 1000).padStart(3, '0')}${String(1000 + (numberSeq++ % 9000)).padStart(4, '0')}`;

/** A team whose fresh number runs the team's script for incoming calls. */
async function inboundTeam(opts: { maxConcurrent?: number } = {}): Promise<TestTeam & { inbound: string }> {
  const team = await createTestTeam(app.pool, opts);
  const inbound = freshNumber();
  await addTeamNumber(app.pool, { teamId: team.teamId, phoneNumber: inbound, inboundScriptId: team.scriptId });
  return { ...team, inbound };
}

const invite = (body: Record<string, unknown>, auth: { secret?: string } = { secret: SECRET }) =>
  app.request('POST', '/internal/v1/inbound-calls', { key: auth.secret, body });

const counts = async (teamId: string) => {
  const { rows } = await app.pool.query<{ calls: number; contacts: number }>(
    'SELECT (SELECT count(*)::int FROM calls WHERE team_id = $1) AS calls, (SELECT count(*)::int FROM contacts WHERE team_id = $1) AS contacts',
    [teamId],
  );
  return rows[0];
};

describe('POST /internal/v1/inbound-calls', () => {
  test('a call to a number with an inbound script: 201, an in-progress inbound call of the caller’s new contact, a slot, call.started and its workflow', async () => {
    const team = await inboundTeam();
    // An endpoint subscribed to call.started: the event is recorded for it (no worker delivers it here).
    await insertWebhookEndpoint(app.pool, { id: randomUUID(), teamId: team.teamId, url: 'https://hooks.example.test/calls', events: ['call.started'], description: null, secret: 'whsec_test' });
    const caller = freshNumber();
    const sipCallId = `${randomUUID()}@trunk.example`;
    const res = await invite({ to_number: team.inbound, from_number: caller, sip_call_id: sipCallId });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.success, true);
    assert.equal(res.json.team_id, team.teamId);
    assert.equal(res.json.script_id, team.scriptId);
    assert.equal(res.json.status, 'in-progress');
    assert.equal(res.json.created, true);
    const { rows } = await app.pool.query('SELECT * FROM calls WHERE id = $1', [res.json.call_id]);
    const call = rows[0];
    assert.equal(call.type, 'inbound');
    assert.equal(call.status, 'in-progress');
    assert.equal(call.progress, 'ringing');
    assert.equal(call.from_number, caller, 'from: the caller');
    assert.equal(call.to_number, team.inbound, 'to: the team’s number');
    assert.equal(call.provider, 'sip');
    assert.equal(call.provider_call_id, sipCallId);
    assert.ok(call.actual_time, 'started now');
    assert.ok(call.workflow_started_at, 'its workflow is started');
    const contact = (await app.pool.query('SELECT * FROM contacts WHERE id = $1', [res.json.contact_id])).rows[0];
    assert.equal(contact.team_id, team.teamId);
    assert.equal(contact.phone_number, caller);
    assert.equal(contact.first_name, null, 'created with just the number');
    assert.equal(await countLiveSlots(app.pool, team.teamId), 1, 'the call holds a slot');
    const description = await env.client.workflow.getHandle(callWorkflowId(res.json.call_id)).describe();
    assert.equal(description.status.name, 'RUNNING');
    const events = await app.pool.query('SELECT type, payload FROM webhook_events WHERE call_id = $1', [res.json.call_id]);
    assert.deepEqual(events.rows.map((r) => r.type), ['call.started']);
    assert.equal(events.rows[0].payload.data.call.type, 'inbound');
  });

  test('a local-format caller number and an existing contact: the team’s contact is found by number, its fields kept', async () => {
    const team = await inboundTeam();
    const existing = await upsertContactByPhone(app.pool, team.teamId, { phone_number: '+12125550147', first_name: 'Jane', last_name: 'Doe' });
    const res = await invite({ to_number: team.inbound, from_number: '(212) 555-0147', sip_call_id: randomUUID() });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.contact_id, existing.contact.id);
    const contact = (await app.pool.query('SELECT first_name, last_name FROM contacts WHERE id = $1', [existing.contact.id])).rows[0];
    assert.deepEqual(contact, { first_name: 'Jane', last_name: 'Doe' });
  });

  test('the same sip_call_id again, even concurrently: the same call, never two (200, created false)', async () => {
    const team = await inboundTeam({ maxConcurrent: 5 });
    const sipCallId = randomUUID();
    const body = { to_number: team.inbound, from_number: freshNumber(), sip_call_id: sipCallId };
    const answers = await Promise.all(Array.from({ length: 5 }, () => invite(body)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 201]);
    assert.equal(new Set(answers.map((a) => a.json.call_id)).size, 1);
    const again = await invite(body);
    assert.equal(again.status, 200);
    assert.equal(again.json.call_id, answers[0].json.call_id);
    assert.equal(again.json.created, false);
    assert.deepEqual(await counts(team.teamId), { calls: 1, contacts: 1 });
    assert.equal(await countLiveSlots(app.pool, team.teamId), 1, 'one slot');
  });

  test('at the team’s ceiling: 429 with sip_status 486 and max_concurrent, and nothing recorded; the call holding the slot may still repeat its request', async () => {
    const team = await inboundTeam({ maxConcurrent: 1 });
    const first = { to_number: team.inbound, from_number: freshNumber(), sip_call_id: randomUUID() };
    assert.equal((await invite(first)).status, 201);
    const before = await counts(team.teamId);
    const busy = await invite({ to_number: team.inbound, from_number: freshNumber(), sip_call_id: randomUUID() });
    assert.equal(busy.status, 429, busy.text);
    assert.equal(busy.json.success, false);
    assert.equal(busy.json.code, 'at_ceiling');
    assert.equal(busy.json.sip_status, 486);
    assert.equal(busy.json.max_concurrent, 1);
    assert.match(busy.json.message, /ceiling of 1/);
    assert.deepEqual(await counts(team.teamId), before, 'no call row, no contact');
    assert.equal((await invite(first)).status, 200, 'the retransmitted INVITE of the call that holds the slot');
  });

  test('an unknown number: 404 with sip_status 404; a number without an inbound script: 409 with sip_status 480; neither records anything', async () => {
    const team = await createTestTeam(app.pool);
    const before = await counts(team.teamId);
    const unknown = await invite({ to_number: freshNumber(), from_number: freshNumber(), sip_call_id: randomUUID() });
    assert.equal(unknown.status, 404, unknown.text);
    assert.deepEqual([unknown.json.code, unknown.json.sip_status], ['unknown_number', 404]);
    const notANumber = await invite({ to_number: 'voice-agent', from_number: freshNumber(), sip_call_id: randomUUID() });
    assert.deepEqual([notANumber.status, notANumber.json.sip_status], [404, 404]);
    const noScript = await invite({ to_number: team.fromNumber, from_number: freshNumber(), sip_call_id: randomUUID() });
    assert.equal(noScript.status, 409, noScript.text);
    assert.deepEqual([noScript.json.code, noScript.json.sip_status], ['no_inbound_script', 480]);
    assert.match(noScript.json.message, /takes no incoming calls/);
    assert.deepEqual(await counts(team.teamId), before);
  });

  test('team scoping: of two teams with the number, the one with the inbound script takes the call, with a contact of its own', async () => {
    const taker = await inboundTeam();
    const other = await createTestTeam(app.pool);
    await addTeamNumber(app.pool, { teamId: other.teamId, phoneNumber: taker.inbound });
    const caller = freshNumber();
    await upsertContactByPhone(app.pool, other.teamId, { phone_number: caller, first_name: 'Other' });
    const res = await invite({ to_number: taker.inbound, from_number: caller, sip_call_id: randomUUID() });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json.team_id, taker.teamId);
    const contact = (await app.pool.query('SELECT team_id, first_name FROM contacts WHERE id = $1', [res.json.contact_id])).rows[0];
    assert.deepEqual(contact, { team_id: taker.teamId, first_name: null });
    assert.equal((await counts(other.teamId)).calls, 0);
  });

  test('auth and validation: 401 without the edge secret; 400 naming the field; 400 with sip_status 433 for a caller without a number; nothing recorded', async () => {
    const team = await inboundTeam();
    const before = await counts(team.teamId);
    const body = { to_number: team.inbound, from_number: freshNumber(), sip_call_id: randomUUID() };
    assert.equal((await invite(body, {})).status, 401);
    assert.equal((await invite(body, { secret: 'wrong-secret' })).status, 401);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...body, to_number: undefined }, /to_number is required/],
      [{ ...body, from_number: 12125550100 }, /from_number: must be a string/],
      [{ ...body, sip_call_id: '' }, /sip_call_id: must not be empty/],
      [{ ...body, sip_call_id: 'x'.repeat(257) }, /sip_call_id: must be at most 256 characters/],
    ];
    for (const [bad, message] of cases) {
      const res = await invite(bad);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.json.success, false);
      assert.match(res.json.message, message);
    }
    const anonymous = await invite({ ...body, from_number: 'anonymous' });
    assert.equal(anonymous.status, 400, anonymous.text);
    assert.match(anonymous.json.message, /from_number is not a phone number/);
    assert.deepEqual([anonymous.json.code, anonymous.json.sip_status], ['caller_number_invalid', 433]);
    assert.deepEqual(await counts(team.teamId), before);
  });

  test('GET /api/v1/calls?type=inbound lists the team’s inbound calls only', async () => {
    const team = await inboundTeam();
    const taken = await invite({ to_number: team.inbound, from_number: freshNumber(), sip_call_id: randomUUID() });
    const scheduled = await app.request('POST', '/api/v1/create-phone-call', {
      key: team.apiKey,
      body: { script_id: team.scriptId, from_number: team.fromNumber, contact: { phone_number: freshNumber() }, scheduled_time: '2099-01-01T00:00:00Z' },
    });
    assert.equal(scheduled.status, 201, scheduled.text);
    const inbound = await app.request('GET', '/api/v1/calls?type=inbound', { key: team.apiKey });
    assert.equal(inbound.status, 200, inbound.text);
    assert.deepEqual(inbound.json.calls.map((c: { id: string; type: string }) => [c.id, c.type]), [[taken.json.call_id, 'inbound']]);
    assert.equal(inbound.json.meta.total, 1);
    const outbound = await app.request('GET', '/api/v1/calls?type=outbound', { key: team.apiKey });
    assert.deepEqual(outbound.json.calls.map((c: { type: string }) => c.type), ['outbound']);
    const result = await app.request('GET', `/api/v1/get-call-result/${taken.json.call_id}`, { key: team.apiKey });
    assert.equal(result.json.call.type, 'inbound');
    const status = await app.request('GET', `/api/v1/get-call-status/${taken.json.call_id}`, { key: team.apiKey });
    assert.equal(status.json.call.status, 'in-progress');
  });

  test('retry-call of an ended inbound call calls the caller back: an outbound call from the number they called', async () => {
    const team = await inboundTeam();
    const caller = freshNumber();
    const taken = await invite({ to_number: team.inbound, from_number: caller, sip_call_id: randomUUID() });
    await completeCall(app.pool, taken.json.call_id, { status: 'hang-up', endReason: 'User Hangup', endTime: new Date(), progress: 'done' });
    const retry = await app.request('POST', `/api/v1/retry-call/${taken.json.call_id}`, { key: team.apiKey, body: { scheduled_time: '2099-01-01T00:00:00Z' } });
    assert.equal(retry.status, 201, retry.text);
    const next = (await app.pool.query('SELECT type, from_number, to_number, contact_id, original_call_id FROM calls WHERE id = $1', [retry.json.call_id])).rows[0];
    assert.deepEqual(next, { type: 'outbound', from_number: team.inbound, to_number: caller, contact_id: taken.json.contact_id, original_call_id: taken.json.call_id });
  });

  test('the endpoint is in the OpenAPI document with its refusals', async () => {
    const doc = await app.request('GET', '/api/v1/openapi.json');
    const op = doc.json.paths['/internal/v1/inbound-calls'].post;
    for (const status of ['200', '201', '400', '401', '404', '409', '429']) assert.ok(op.responses[status], `documents ${status}`);
    assert.deepEqual(op.security, [{ mediaEdgeAuth: [] }]);
  });
});
