// Web calls through the real Koa app over Postgres, with a worker running the real
// activities in the time-skipping environment: create-web-session, create-web-call and
// the media edge's POST /internal/v1/web-sessions/redeem (docs/web-calls.md). Rate limits are off here: they are not the subject, and the 50-way race
// would otherwise meet the per-key write bucket.
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import { upsertContactByPhone } from '../../src/db/repositories/contacts.js';
import { countTeamWebSessions, findWebSessionById } from '../../src/db/repositories/webSessions.js';
import { WEB_CONNECT_TIMEOUT_MS } from '../../workflows/callWorkflow.js';
import { callWorkflowId, webSessionWorkflowId, WEB_SESSION_TTL_MS } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { insertPhoneCalls } from '../support/callRows.js';
import { callTestConfig, createCallWorker } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const SECRET = 'media-edge-secret-for-tests';
const EDGE = {
  TEMPORAL_TASK_QUEUE: 'web-calls-api',
  RATE_LIMITS_ENABLED: 'false',
  MEDIA_EDGE_WS_URL: 'wss://edge.example.test/ws',
  MEDIA_EDGE_SIP_DOMAIN: 'edge.example.test',
  MEDIA_EDGE_SIP_USERNAME: 'browser-user',
  MEDIA_EDGE_SIP_PASSWORD: 'browser-pass',
  MEDIA_EDGE_TARGET: 'sip:voice-agent@edge.example.test',
  MEDIA_EDGE_SECRET: SECRET,
} as const;

let env: TestWorkflowEnvironment;
let app: TestApi;
let unconfigured: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;
let other: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, config: EDGE });
  unconfigured = await startTestApi({ temporal: env.client, config: { ...EDGE, MEDIA_EDGE_WS_URL: '', MEDIA_EDGE_SIP_DOMAIN: '' } });
  worker = await createCallWorker(env, app.pool, callTestConfig(EDGE));
  running = worker.run();
  team = await createTestTeam(app.pool, { maxConcurrent: 50 });
  other = await createTestTeam(app.pool);
});

after(async () => {
  worker?.shutdown();
  await running;
  await unconfigured?.close();
  await app?.close();
  await env?.teardown();
});

const createSession = (t: TestTeam, body: Record<string, unknown> = {}) =>
  app.request('POST', '/api/v1/create-web-session', { key: t.apiKey, body: { script_id: t.scriptId, ...body } });
const createCall = (t: TestTeam, body: Record<string, unknown> = {}) =>
  app.request('POST', '/api/v1/create-web-call', { key: t.apiKey, body: { script_id: t.scriptId, ...body } });
const redeem = (token: unknown, auth: { secret?: string } = { secret: SECRET }) =>
  app.request('POST', '/internal/v1/web-sessions/redeem', { key: auth.secret, body: { session_token: token } });

async function callCount(teamId: string): Promise<number> {
  const { rows } = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE team_id = $1', [teamId]);
  return rows[0].n;
}

describe('POST /api/v1/create-web-session', () => {
  test('201 with every documented field, session_token also inside headers, expires_at two minutes out, and no call yet', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 7 });
    const before = Date.now();
    const res = await createSession(t, { participant_identity: 'Visitor 42' });
    assert.equal(res.status, 201, res.text);
    const body = res.json;
    assert.deepEqual(Object.keys(body).sort(), [
      'contact_id', 'did', 'expires_at', 'headers', 'max_concurrent', 'script_id', 'session_id', 'session_token',
      'sip_domain', 'sip_password', 'sip_username', 'success', 'target', 'ws_url',
    ]);
    assert.equal(body.success, true);
    assert.equal(body.script_id, t.scriptId);
    assert.equal(body.did, null);
    assert.equal(body.max_concurrent, 7);
    assert.equal(body.ws_url, EDGE.MEDIA_EDGE_WS_URL);
    assert.equal(body.sip_domain, EDGE.MEDIA_EDGE_SIP_DOMAIN);
    assert.equal(body.sip_username, EDGE.MEDIA_EDGE_SIP_USERNAME);
    assert.equal(body.sip_password, EDGE.MEDIA_EDGE_SIP_PASSWORD);
    assert.equal(body.target, EDGE.MEDIA_EDGE_TARGET);
    assert.match(body.session_token, /^wst_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(body.headers, {
      'X-Session-Token': body.session_token,
      'X-Session-Id': body.session_id,
      'X-Script-Id': t.scriptId,
      'X-Contact-Id': body.contact_id,
      'X-Participant-Identity': 'Visitor 42',
    });
    const expiresIn = Date.parse(body.expires_at) - before;
    assert.ok(expiresIn >= WEB_SESSION_TTL_MS && expiresIn < WEB_SESSION_TTL_MS + 5_000, `expires in ${expiresIn} ms`);
    assert.equal(await callCount(t.teamId), 0, 'no call exists yet');
    const description = await env.client.workflow.getHandle(webSessionWorkflowId(body.session_id)).describe();
    assert.equal(description.status.name, 'RUNNING');
  });

  test('the token is stored only as its SHA-256', async () => {
    const res = await createSession(team);
    const row = await findWebSessionById(app.pool, res.json.session_id);
    assert.equal(row?.token_hash, createHash('sha256').update(res.json.session_token).digest('hex'));
    const { rows } = await app.pool.query('SELECT * FROM web_sessions WHERE id = $1', [res.json.session_id]);
    assert.ok(!JSON.stringify(rows[0]).includes(res.json.session_token));
  });

  test('without contact_id the session uses the team’s shared web contact; with one it echoes it; did is one of the team’s numbers', async () => {
    const a = await createSession(team);
    const b = await createSession(team);
    assert.equal(a.json.contact_id, b.json.contact_id);
    const { rows } = await app.pool.query('SELECT phone_number, shared_web FROM contacts WHERE id = $1', [a.json.contact_id]);
    assert.deepEqual(rows[0], { phone_number: null, shared_web: true });

    const { contact } = await upsertContactByPhone(app.pool, team.teamId, { phone_number: '+14155550123', first_name: 'Grace' });
    const c = await createSession(team, { contact_id: contact.id, did: team.fromNumber });
    assert.equal(c.status, 201, c.text);
    assert.equal(c.json.contact_id, contact.id);
    assert.equal(c.json.did, team.fromNumber);
    assert.equal(c.json.headers['X-Did'], team.fromNumber);
    assert.equal(c.json.headers['X-Contact-Id'], contact.id);
  });

  test('objects are validated (400) and linked to the contact', async () => {
    await app.request('POST', '/api/v1/object-types', { key: team.apiKey, body: { type_name: 'web_lead', display_name: 'Web lead', schema: { id: 'string', source: 'string' }, validation_mode: 'strict' } });
    const bad = await createSession(team, { objects: { web_lead: { source: 5 } } });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.json.message, /objects\.web_lead/);
    const unknownType = await createSession(team, { objects: { no_such_type: {} } });
    assert.equal(unknownType.status, 400);
    const notAMap = await createSession(team, { objects: 'x' });
    assert.equal(notAMap.status, 400);
    assert.match(notAMap.json.message, /objects/);

    const { contact } = await upsertContactByPhone(app.pool, team.teamId, { phone_number: '+14155550124', first_name: 'Alan' });
    const ok = await createSession(team, { contact_id: contact.id, objects: { web_lead: { id: 'lead-1', source: 'landing page' } } });
    assert.equal(ok.status, 201, ok.text);
    const got = await app.request('GET', `/api/v1/get-contact/${encodeURIComponent('+14155550124')}`, { key: team.apiKey });
    assert.deepEqual(got.json.contact.object_data.web_lead, [{ id: 'lead-1', source: 'landing page' }]);
  });

  test('400: invalid JSON, script_id missing or malformed, contact_id malformed, bad did, participant_identity with a line break', async () => {
    const cases: [string, { body?: unknown; rawBody?: string }, RegExp][] = [
      ['invalid JSON', { rawBody: '{"script_id": ' }, /JSON/i],
      ['missing script_id', { body: {} }, /script_id is required/],
      ['malformed script_id', { body: { script_id: 'not-a-uuid' } }, /script_id: must be a UUID/],
      ['script_id not a string', { body: { script_id: 12 } }, /script_id: must be a string/],
      ['malformed contact_id', { body: { script_id: team.scriptId, contact_id: '123' } }, /contact_id: must be a UUID/],
      ['did not a phone number', { body: { script_id: team.scriptId, did: 'abc' } }, /did is not a valid phone number/],
      ['participant_identity with a line break', { body: { script_id: team.scriptId, participant_identity: 'a\r\nX-Evil: 1' } }, /participant_identity/],
    ];
    for (const [name, opts, message] of cases) {
      const res = await app.request('POST', '/api/v1/create-web-session', { key: team.apiKey, ...opts });
      assert.equal(res.status, 400, `${name}: ${res.text}`);
      assert.equal(res.json.success, false);
      assert.match(res.json.message, message, name);
    }
  });

  test('404: unknown or foreign script, foreign contact, a number that is not the team’s', async () => {
    const foreignContact = (await createSession(other)).json.contact_id;
    const cases: [string, Record<string, unknown>, string][] = [
      ['unknown script', { script_id: randomUUID() }, 'script_id not found or does not belong to your team'],
      ['foreign script', { script_id: other.scriptId }, 'script_id not found or does not belong to your team'],
      ['unknown contact', { contact_id: randomUUID() }, 'contact_id not found or does not belong to your team'],
      ['foreign contact', { contact_id: foreignContact }, 'contact_id not found or does not belong to your team'],
      ['foreign number', { did: other.fromNumber }, 'did not found or does not belong to your team'],
    ];
    const sessionsBefore = await countTeamWebSessions(app.pool, team.teamId);
    for (const [name, body, message] of cases) {
      const res = await createSession(team, body);
      assert.equal(res.status, 404, `${name}: ${res.text}`);
      assert.deepEqual(res.json, { success: false, message });
    }
    assert.deepEqual(await countTeamWebSessions(app.pool, team.teamId), sessionsBefore, 'nothing minted');
  });

  test('fifty concurrent requests against a ceiling of five: exactly five 201s and forty-five 429s with max_concurrent', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 5 });
    const responses = await Promise.all(Array.from({ length: 50 }, () => createSession(t)));
    const created = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status === 429);
    assert.equal(created.length, 5, `statuses: ${responses.map((r) => r.status).join(',')}`);
    assert.equal(refused.length, 45);
    for (const r of refused) assert.deepEqual(r.json, { success: false, message: 'Team is at its concurrent call limit of 5', max_concurrent: 5 });
    assert.equal(await countLiveSlots(app.pool, t.teamId), 5);
    assert.equal((await countTeamWebSessions(app.pool, t.teamId)).minted, 5);
    assert.equal(new Set(created.map((r) => r.json.session_id)).size, 5);
  });

  test('with an Idempotency-Key a retry answers the same session and mints nothing more', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 3 });
    const send = () =>
      app.request('POST', '/api/v1/create-web-session', { key: t.apiKey, body: { script_id: t.scriptId }, headers: { 'Idempotency-Key': 'visitor-click-1' } });
    const first = await send();
    const again = await send();
    assert.equal(first.status, 201, first.text);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('Idempotent-Replayed'), 'true');
    assert.equal(again.json.session_id, first.json.session_id);
    assert.equal(again.json.session_token, first.json.session_token);
    assert.equal((await countTeamWebSessions(app.pool, t.teamId)).minted, 1);
    assert.equal(await countLiveSlots(app.pool, t.teamId), 1);
  });

  test('500 when the web-call path is not configured', async () => {
    for (const path of ['/api/v1/create-web-session', '/api/v1/create-web-call']) {
      const res = await unconfigured.request('POST', path, { key: team.apiKey, body: { script_id: team.scriptId } });
      assert.equal(res.status, 500);
      assert.deepEqual(res.json, { success: false, message: 'The web-call path is not configured for this environment' });
    }
  });
});

describe('POST /internal/v1/web-sessions/redeem', () => {
  test('the media edge secret is required', async () => {
    const token = (await createSession(team)).json.session_token;
    assert.equal((await redeem(token, {})).status, 401);
    assert.equal((await redeem(token, { secret: 'wrong-secret-wrong-secret' })).status, 401);
    assert.equal((await redeem(token, { secret: team.apiKey })).status, 401, 'an API key is not the media edge');
    assert.equal((await redeem(token)).status, 201, 'the token was not spent by the refused attempts');
    assert.equal((await redeem(undefined)).status, 400);
  });

  test('201 creates the web call, which appears in the call log; a second redemption answers 409; an unknown token 404', async () => {
    const session = (await createSession(team, { participant_identity: 'Ada' })).json;
    const res = await redeem(session.session_token);
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(Object.keys(res.json).sort(), ['call_id', 'contact_id', 'script_id', 'success']);
    assert.equal(res.json.script_id, team.scriptId);
    assert.equal(res.json.contact_id, session.contact_id);

    const list = await app.request('GET', '/api/v1/calls?type=web&limit=500', { key: team.apiKey });
    const listed = list.json.calls.find((c: { id: string }) => c.id === res.json.call_id);
    assert.ok(listed, 'in the call log');
    assert.equal(listed.type, 'web');
    assert.equal(listed.status, 'scheduled');
    const status = await app.request('GET', `/api/v1/get-call-status/${res.json.call_id}`, { key: team.apiKey });
    assert.equal(status.json.call.status, 'scheduled');

    const again = await redeem(session.session_token);
    assert.deepEqual([again.status, again.json], [409, { success: false, message: 'Session token has already been used' }]);
    const unknown = await redeem('wst_nope');
    assert.deepEqual([unknown.status, unknown.json], [404, { success: false, message: 'Session token not found' }]);
  });

  test('of thirty concurrent redemptions exactly one answers 201', async () => {
    const t = await createTestTeam(app.pool);
    const token = (await createSession(t)).json.session_token;
    const statuses = (await Promise.all(Array.from({ length: 30 }, () => redeem(token)))).map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 1, statuses.join(','));
    assert.equal(statuses.filter((s) => s === 409).length, 29);
    assert.equal(await callCount(t.teamId), 1);
  });

  test('after two minutes the token answers 410 and creates nothing; the slot is back', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 1 });
    const session = (await createSession(t)).json;
    assert.equal((await createSession(t)).status, 429);
    await env.sleep(WEB_SESSION_TTL_MS);
    await env.client.workflow.getHandle(webSessionWorkflowId(session.session_id)).result();
    const res = await redeem(session.session_token);
    assert.deepEqual([res.status, res.json], [410, { success: false, message: 'Session token has expired' }]);
    assert.equal(await callCount(t.teamId), 0);
    assert.equal((await createSession(t)).status, 201, 'the slot came back');
  });
});

describe('POST /api/v1/create-web-call', () => {
  test('201: the call exists now as scheduled, with the SIP bootstrap and X-Call-Id / X-Call-Token headers', async () => {
    const before = Date.now();
    const res = await createCall(team, { participant_identity: 'Kiosk 3' });
    const after = Date.now();
    assert.equal(res.status, 201, res.text);
    const body = res.json;
    assert.equal(body.success, true);
    assert.equal(body.status, 'scheduled');
    assert.equal(body.script_id, team.scriptId);
    assert.equal(body.did, 'web');
    assert.equal(body.ws_url, EDGE.MEDIA_EDGE_WS_URL);
    assert.equal(body.target, EDGE.MEDIA_EDGE_TARGET);
    assert.equal(body.sip_username, EDGE.MEDIA_EDGE_SIP_USERNAME);
    // The token's expiry is the end of the two-minute connect window, inside what the HMAC covers.
    const exp = Number(String(body.headers['X-Call-Token']).split('.')[0]);
    assert.ok(exp >= Math.floor((before + 120_000) / 1000) && exp <= Math.floor((after + 120_000) / 1000), `exp ${exp}`);
    assert.deepEqual(body.headers, {
      'X-Call-Id': body.call_id,
      'X-Call-Token': `${exp}.${createHmac('sha256', SECRET).update(`web-call:${body.call_id}:${exp}`).digest('base64url')}`,
      'X-Script-Id': team.scriptId,
      'X-Contact-Id': body.contact_id,
      'X-Did': 'web',
      'X-Participant-Identity': 'Kiosk 3',
    });
    const status = await app.request('GET', `/api/v1/get-call-status/${body.call_id}`, { key: team.apiKey });
    assert.equal(status.json.call.status, 'scheduled');
    const result = await app.request('GET', `/api/v1/get-call-result/${body.call_id}`, { key: team.apiKey });
    assert.equal(result.json.call.type, 'web');
  });

  test('did: one of the team’s numbers is the AI-side identity; another team’s number is 404', async () => {
    const ok = await createCall(team, { did: team.fromNumber });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.json.did, team.fromNumber);
    const result = await app.request('GET', `/api/v1/get-call-result/${ok.json.call_id}`, { key: team.apiKey });
    assert.equal(result.status, 200);
    const foreign = await createCall(team, { did: other.fromNumber });
    assert.deepEqual([foreign.status, foreign.json.message], [404, 'did not found or does not belong to your team']);
    const script = await createCall(team, { script_id: other.scriptId });
    assert.deepEqual([script.status, script.json.message], [404, 'script_id not found or does not belong to your team']);
    const missing = await app.request('POST', '/api/v1/create-web-call', { key: team.apiKey, body: {} });
    assert.equal(missing.status, 400);
  });

  test('at the ceiling it answers 429 like create-web-session, counting sessions and web calls together', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 2 });
    assert.equal((await createCall(t)).status, 201);
    assert.equal((await createSession(t)).status, 201);
    const res = await createCall(t);
    assert.deepEqual([res.status, res.json], [429, { success: false, message: 'Team is at its concurrent call limit of 2', max_concurrent: 2 }]);
    assert.equal(await callCount(t.teamId), 1, 'the refused call was not created');
  });
});

describe('the media edge’s claim of a web call and its System Notes (internal API)', () => {
  const claim = (callId: string, claimId: unknown, auth: { secret?: string } = { secret: SECRET }) =>
    app.request('POST', `/internal/v1/web-calls/${callId}/claim`, { key: auth.secret, body: { claim_id: claimId } });
  const release = (callId: string, claimId: unknown) => app.request('POST', `/internal/v1/web-calls/${callId}/release`, { key: SECRET, body: { claim_id: claimId } });
  const note = (callId: string, body: unknown, auth: { secret?: string } = { secret: SECRET }) =>
    app.request('POST', `/internal/v1/calls/${callId}/system-notes`, { key: auth.secret, body });

  test('one claim per scheduled web call: 200 names the team, the same claim again 200, another 409; released, another may claim; unknown and phone calls 404', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 5 });
    const callId = (await createCall(t)).json.call_id;
    const first = randomUUID();
    const res = await claim(callId, first);
    assert.deepEqual([res.status, res.json], [200, { success: true, call_id: callId, team_id: t.teamId, script_id: t.scriptId, contact_id: res.json.contact_id }]);
    assert.equal((await claim(callId, first)).status, 200, 'a retried claim is still its own');
    const second = randomUUID();
    const refused = await claim(callId, second);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.message, 'Call already connected');
    assert.deepEqual((await release(callId, second)).json, { success: true, call_id: callId, released: false }, 'a claim not held releases nothing');
    assert.deepEqual((await release(callId, first)).json, { success: true, call_id: callId, released: true });
    assert.equal((await claim(callId, second)).status, 200);

    const unknown = await claim(randomUUID(), first);
    assert.deepEqual([unknown.status, unknown.json], [404, { success: false, message: 'Call not found' }]);
    assert.equal((await claim('not-a-uuid', first)).status, 404);
    const [phoneCall] = await insertPhoneCalls(app.pool, { id: t.teamId, scriptId: t.scriptId }, 1);
    assert.equal((await claim(phoneCall, first)).status, 404, 'only web calls are claimed');
  });

  test('claim and release need the media edge secret and a UUID claim_id (400 naming it), writing nothing', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 5 });
    const callId = (await createCall(t)).json.call_id;
    assert.equal((await claim(callId, randomUUID(), {})).status, 401);
    assert.equal((await claim(callId, randomUUID(), { secret: t.apiKey })).status, 401, 'an API key is not the media edge');
    for (const bad of [undefined, 'nope', 42]) {
      const res = await claim(callId, bad);
      assert.equal(res.status, 400, JSON.stringify(bad));
      assert.match(res.json.message, /claim_id/);
    }
    assert.equal((await release(callId, 'nope')).status, 400);
    const { rows } = await app.pool.query('SELECT 1 FROM web_call_claims WHERE call_id = $1', [callId]);
    assert.equal(rows.length, 0, 'nothing claimed');
  });

  test('a web call that ended is 410 naming its status; a System Note is refused 409 while it is open, added once after it ended', async () => {
    const t = await createTestTeam(app.pool, { maxConcurrent: 5 });
    const callId = (await createCall(t)).json.call_id;
    const recordingLost = { kind: 'recording_lost', text: 'The recording could not be stored.' };
    const open = await note(callId, recordingLost);
    assert.deepEqual([open.status, open.json], [409, { success: false, message: 'Call has not ended yet' }]);

    await env.sleep(WEB_CONNECT_TIMEOUT_MS + 1000);
    await env.client.workflow.getHandle(callWorkflowId(callId)).result();
    const ended = await claim(callId, randomUUID());
    assert.deepEqual([ended.status, ended.json], [410, { success: false, message: 'Call has ended: its status is failed' }]);

    assert.deepEqual((await note(callId, recordingLost)).json, { success: true, call_id: callId, added: true });
    assert.deepEqual((await note(callId, recordingLost)).json, { success: true, call_id: callId, added: false }, 'a repeated report adds nothing');
    const result = await app.request('GET', `/api/v1/get-call-result/${callId}`, { key: t.apiKey });
    const notes = result.json.call.system_notes as { kind: string; text: string }[];
    assert.deepEqual(
      notes.filter((n) => n.kind === 'recording_lost').map((n) => n.text),
      [recordingLost.text],
    );

    assert.equal((await note(callId, recordingLost, {})).status, 401);
    const badKind = await note(callId, { kind: 'anything', text: 'x' });
    assert.deepEqual([badKind.status, badKind.json.message], [400, 'Invalid request: kind: must be one of recording_lost']);
    assert.match((await note(callId, { kind: 'recording_lost' })).json.message, /text is required/);
    assert.equal((await note(randomUUID(), recordingLost)).status, 404);
  });
});

test('the OpenAPI document describes the web-call endpoints and the redeem endpoint', async () => {
  const res = await app.request('GET', '/api/v1/openapi.json');
  const paths = res.json.paths;
  assert.ok(paths['/api/v1/create-web-session'].post.responses['429']);
  assert.ok(paths['/api/v1/create-web-call'].post.responses['201']);
  assert.ok(paths['/internal/v1/web-sessions/redeem'].post.responses['410']);
  assert.ok(paths['/internal/v1/web-calls/{call_id}/claim'].post.responses['410']);
  assert.ok(paths['/internal/v1/web-calls/{call_id}/release'].post.responses['200']);
  assert.ok(paths['/internal/v1/calls/{call_id}/system-notes'].post.responses['409']);
});
