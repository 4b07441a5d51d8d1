// Idempotency-Key on the real create endpoints: create-contact, create-list, upsert-object
// and create-phone-call.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { deriveIdempotentId, requestFingerprint } from '../../src/api/middleware/idempotency.js';
import { allRoutes } from '../../src/api/routes.js';
import { claimIdempotencyKey, findIdempotencyKey } from '../../src/db/repositories/idempotency.js';
import { insertList } from '../../src/db/repositories/lists.js';
import { insertObject } from '../../src/db/repositories/objects.js';
import { scheduleCall } from '../../src/services/calls.js';
import { createTestTeam, startTestApi, type TestApi, type TestResponse, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let app: TestApi;
let staleApp: TestApi;
let team: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, routes: allRoutes(), config: { RATE_LIMITS_ENABLED: 'false' } });
  staleApp = await startTestApi({ temporal: env.client, routes: allRoutes(), config: { RATE_LIMITS_ENABLED: 'false', IDEMPOTENCY_STALE_AFTER_SECONDS: '1' } });
  team = await createTestTeam(app.pool);
});

after(async () => {
  await app?.close();
  await staleApp?.close();
  await env?.teardown();
});

let phoneSeq = 0;
/** A phone number no other test of this run uses (last four digits avoid the simulator's outcomes). */
function freshPhone(): string {
  phoneSeq += 1;
  // The exchange (digits 5-7) must start with 2-9 to be a valid North American number.
  return `+1415${200 + (process.pid % 800)}${String(1000 + phoneSeq * 7).padStart(4, '0')}`;
}

function post(api: TestApi, path: string, body: unknown, key?: string, who: TestTeam = team): Promise<TestResponse> {
  return api.request('POST', path, { key: who.apiKey, body, headers: key === undefined ? {} : { 'Idempotency-Key': key } });
}

function assertReplayOf(replayed: TestResponse, original: TestResponse): void {
  assert.equal(replayed.status, original.status);
  assert.equal(replayed.text, original.text);
  assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
}

/**
 * What a run that crashed after claiming the key leaves behind: the key in progress (stale
 * after 1 s for staleApp). Returns the request's derived resource id, the one the crashed
 * run would have created its resource under.
 */
async function crashedClaim(who: TestTeam, endpoint: string, key: string, body: unknown): Promise<string> {
  const claimed = await claimIdempotencyKey(app.pool, {
    teamId: who.teamId,
    endpoint,
    key,
    requestHash: requestFingerprint({ params: {}, query: {}, body }),
    attemptId: randomUUID(),
    ttlSeconds: 86_400,
    staleAfterSeconds: 1,
  });
  assert.ok(claimed, 'the key was free');
  return deriveIdempotentId({ teamId: who.teamId, endpoint, key }, claimed.createdAt);
}

async function countCalls(teamId: string): Promise<number> {
  const { rows } = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE team_id = $1', [teamId]);
  return rows[0].n;
}

describe('create-contact with an Idempotency-Key', () => {
  test('a retry replays the kept 201 and its contact_id byte for byte', async () => {
    const key = randomUUID();
    const body = { phone_number: freshPhone(), first_name: 'Ada', last_name: 'Lovelace' };
    const first = await post(app, '/api/v1/create-contact', body, key);
    assert.equal(first.status, 201);
    const retry = await post(app, '/api/v1/create-contact', { last_name: 'Lovelace', first_name: 'Ada', phone_number: body.phone_number }, key);
    assertReplayOf(retry, first);
  });

  test('a new key for the same phone number still answers 409: the key does not bypass uniqueness', async () => {
    const body = { phone_number: freshPhone(), first_name: 'Grace' };
    assert.equal((await post(app, '/api/v1/create-contact', body, randomUUID())).status, 201);
    const again = await post(app, '/api/v1/create-contact', body, randomUUID());
    assert.equal(again.status, 409);
  });

  test('a kept 409 is replayed as the same 409', async () => {
    const body = { phone_number: freshPhone(), first_name: 'Alan' };
    assert.equal((await post(app, '/api/v1/create-contact', body)).status, 201);
    const key = randomUUID();
    const first = await post(app, '/api/v1/create-contact', body, key);
    assert.equal(first.status, 409);
    assertReplayOf(await post(app, '/api/v1/create-contact', body, key), first);
  });

  test('a 400 for an invalid phone number is not kept: the corrected body runs under the same key', async () => {
    const key = randomUUID();
    const bad = await post(app, '/api/v1/create-contact', { phone_number: 'not a number', first_name: 'Edsger' }, key);
    assert.equal(bad.status, 400);
    const good = await post(app, '/api/v1/create-contact', { phone_number: freshPhone(), first_name: 'Edsger' }, key);
    assert.equal(good.status, 201);
    assert.equal(good.headers.get('idempotent-replayed'), null);
  });

  test('a take-over after a crash that had created the contact does not create a second one', async () => {
    const key = randomUUID();
    const body = { phone_number: freshPhone(), first_name: 'Barbara' };
    // The crashed run claimed the key and created the contact, but never kept its answer.
    await crashedClaim(team, 'POST /api/v1/create-contact', key, body);
    assert.equal((await post(app, '/api/v1/create-contact', body)).status, 201);
    assert.equal((await post(staleApp, '/api/v1/create-contact', body, key)).status, 409, 'still in progress');
    await new Promise((r) => setTimeout(r, 1100));
    const takeover = await post(staleApp, '/api/v1/create-contact', body, key);
    assert.equal(takeover.status, 409);
    assert.match(takeover.json.message, /already exists/);
    const { rows } = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM contacts WHERE team_id = $1 AND phone_number = $2', [team.teamId, body.phone_number]);
    assert.equal(rows[0].n, 1);
  });
});

describe('create-list with an Idempotency-Key', () => {
  test('a take-over after a crash that had created the list answers that same list, not a second one', async () => {
    const who = await createTestTeam(app.pool);
    const key = randomUUID();
    const body = { name: `Crash ${key}` };
    // The crashed run had created the list under the derived id but never kept its answer.
    const listId = await crashedClaim(who, 'POST /api/v1/lists', key, body);
    await insertList(app.pool, who.teamId, body.name, listId);
    await new Promise((r) => setTimeout(r, 1100));
    const takeover = await post(staleApp, '/api/v1/lists', body, key, who);
    assert.equal(takeover.status, 201);
    assert.equal(takeover.headers.get('idempotent-replayed'), null, 'ran again');
    assert.equal(takeover.json.list_id, listId);
    assert.equal(takeover.json.list.name, body.name);
    const { rows } = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM lists WHERE team_id = $1', [who.teamId]);
    assert.equal(rows[0].n, 1);
    assertReplayOf(await post(app, '/api/v1/lists', body, key, who), takeover);
  });

  test('without the header every request creates a new list', async () => {
    const who = await createTestTeam(app.pool);
    const first = await post(app, '/api/v1/lists', { name: 'Twice' }, undefined, who);
    const second = await post(app, '/api/v1/lists', { name: 'Twice' }, undefined, who);
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.notEqual(first.json.list_id, second.json.list_id);
  });
});

describe('upsert-object with an Idempotency-Key', () => {
  test('a take-over after a crash that had created a keyless object updates that object, not a second one', async () => {
    const who = await createTestTeam(app.pool);
    const type = await post(app, '/api/v1/object-types', { type_name: 'note' }, undefined, who);
    assert.equal(type.status, 201);
    const key = randomUUID();
    // No key in data: without the derived id every run would create a new object.
    const body = { type_name: 'note', data: { text: 'call back after five' } };
    const objectId = await crashedClaim(who, 'POST /api/v1/upsert-object', key, body);
    await insertObject(app.pool, who.teamId, { typeId: type.json.object_type.id, data: body.data }, objectId);
    await new Promise((r) => setTimeout(r, 1100));
    const takeover = await post(staleApp, '/api/v1/upsert-object', body, key, who);
    assert.equal(takeover.status, 200);
    assert.equal(takeover.json.action, 'updated');
    assert.equal(takeover.json.object_id, objectId);
    const { rows } = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM objects WHERE team_id = $1', [who.teamId]);
    assert.equal(rows[0].n, 1);
  });

  test('a first run creates the object under the derived id; a new key creates another', async () => {
    const who = await createTestTeam(app.pool);
    assert.equal((await post(app, '/api/v1/object-types', { type_name: 'note' }, undefined, who)).status, 201);
    const body = { type_name: 'note', data: { text: 'hello' } };
    const key = randomUUID();
    const first = await post(app, '/api/v1/upsert-object', body, key, who);
    assert.equal(first.status, 201);
    const ref = { teamId: who.teamId, endpoint: 'POST /api/v1/upsert-object', key };
    assert.equal(first.json.object_id, deriveIdempotentId(ref, (await findIdempotencyKey(app.pool, ref))!.created_at));
    assertReplayOf(await post(app, '/api/v1/upsert-object', body, key, who), first);
    const other = await post(app, '/api/v1/upsert-object', body, randomUUID(), who);
    assert.equal(other.status, 201);
    assert.notEqual(other.json.object_id, first.json.object_id);
  });
});

describe('create-phone-call with an Idempotency-Key', () => {
  const callBody = (who: TestTeam, phone: string) => ({ from_number: who.fromNumber, script_id: who.scriptId, contact: { phone_number: phone, first_name: 'Katherine' } });

  test('50 concurrent requests with one key and one body schedule exactly one call', async () => {
    const raceTeam = await createTestTeam(app.pool, { maxConcurrent: 50 });
    const key = randomUUID();
    const body = callBody(raceTeam, freshPhone());
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(app, '/api/v1/create-phone-call', body, key, raceTeam)));
    const originals = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
    assert.equal(originals.length, 1, `statuses: ${answers.map((a) => a.status).join(',')}`);
    for (const a of answers) {
      if (a === originals[0]) continue;
      if (a.status === 409) assert.equal(a.json.message, 'A request with this Idempotency-Key is still in progress');
      else assertReplayOf(a, originals[0]);
    }
    assert.equal(await countCalls(raceTeam.teamId), 1);
    const callId = originals[0].json.call_id;
    const ref = { teamId: raceTeam.teamId, endpoint: 'POST /api/v1/create-phone-call', key };
    assert.equal(callId, deriveIdempotentId(ref, (await findIdempotencyKey(app.pool, ref))!.created_at));
    const description = await env.client.workflow.getHandle(`call-${callId}`).describe();
    assert.equal(description.workflowId, `call-${callId}`);
  });

  test('a retry replays the same call_id and schedules nothing more', async () => {
    const who = await createTestTeam(app.pool);
    const key = randomUUID();
    const body = callBody(who, freshPhone());
    const first = await post(app, '/api/v1/create-phone-call', body, key, who);
    assert.equal(first.status, 201);
    assertReplayOf(await post(app, '/api/v1/create-phone-call', body, key, who), first);
    assert.equal(await countCalls(who.teamId), 1);
  });

  test('a take-over after a crash that had scheduled the call answers that same call, not a second one', async () => {
    const who = await createTestTeam(app.pool);
    const key = randomUUID();
    const body = callBody(who, freshPhone());
    // The crashed run had scheduled the call under the derived id (row and workflow
    // call-<id>) but never kept its answer.
    const callId = await crashedClaim(who, 'POST /api/v1/create-phone-call', key, body);
    await scheduleCall(
      { pool: app.pool, temporal: env.client, config: app.config },
      { teamId: who.teamId, fromNumber: body.from_number, scriptId: body.script_id, contact: body.contact, callId, type: 'outbound' },
    );
    assert.equal((await post(staleApp, '/api/v1/create-phone-call', body, key, who)).status, 409, 'still in progress');
    await new Promise((r) => setTimeout(r, 1100));
    const takeover = await post(staleApp, '/api/v1/create-phone-call', body, key, who);
    assert.equal(takeover.status, 201);
    assert.equal(takeover.headers.get('idempotent-replayed'), null, 'ran again');
    assert.equal(takeover.json.call_id, callId);
    assert.equal(await countCalls(who.teamId), 1);
  });
});
