// The do-not-call endpoints over the real Koa app and Postgres: adding, reading, removing and
// paging, validation naming the field, %2B paths and team isolation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { calleeNumber } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let api: TestApi;
let team: TestTeam;
let other: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  api = await startTestApi({ temporal: env.client });
  team = await createTestTeam(api.pool);
  other = await createTestTeam(api.pool);
});

after(async () => {
  await api?.close();
  await env?.teardown();
});

const add = (t: TestTeam, body: unknown) => api.request('POST', '/api/v1/do-not-call', { key: t.apiKey, body });
const path = (e164: string) => `/api/v1/do-not-call/${encodeURIComponent(e164)}`;

describe('POST /api/v1/do-not-call', () => {
  test('201 with the entry; the number is normalised; 200 with the first entry when it is on the list already', async () => {
    const number = calleeNumber('4321');
    const local = `(${number.slice(2, 5)}) ${number.slice(5, 8)}-${number.slice(8)}`;
    const res = await add(team, { phone_number: local, reason: 'Asked by email' });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(Object.keys(res.json).sort(), ['entry', 'success']);
    const { created_at, ...entry } = res.json.entry;
    assert.deepEqual(entry, { phone_number: number, reason: 'Asked by email', source: 'api', call_id: null });
    assert.ok(!Number.isNaN(Date.parse(created_at)));
    const again = await add(team, { phone_number: number, reason: 'Another reason' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.json.entry, res.json.entry);
    const noReason = await add(team, { phone_number: calleeNumber('4322') });
    assert.equal(noReason.status, 201);
    assert.equal(noReason.json.entry.reason, null);
  });

  test('400 naming the field: missing, invalid or unknown fields, a reason too long; nothing is written', async () => {
    const cases: [unknown, string][] = [
      [{}, 'Invalid request: phone_number is required'],
      [{ phone_number: 'call me' }, 'Invalid request: phone_number is not a valid phone number'],
      [{ phone_number: 12 }, 'Invalid request: phone_number: expected string, received number'],
      [{ phone_number: '+14155550123', colour: 'red' }, 'Invalid request: unknown field colour'],
      [{ phone_number: '+14155550123', reason: 'x'.repeat(501) }, 'Invalid request: reason: must be at most 500 characters'],
      [{ phone_number: '+14155550123', reason: 'a\u0000b' }, 'Invalid request: reason: must not contain NUL characters or unpaired surrogates'],
    ];
    for (const [body, message] of cases) {
      const res = await add(team, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.deepEqual(res.json, { success: false, message });
    }
    assert.equal((await api.request('GET', path('+14155550123'), { key: team.apiKey })).status, 404);
  });
});

describe('GET and DELETE /api/v1/do-not-call/{phone_number}', () => {
  test('read with %2B or a local format; 404 when not listed; delete answers the number and the entry is gone', async () => {
    const number = calleeNumber('4323');
    await add(team, { phone_number: number });
    const got = await api.request('GET', `/api/v1/do-not-call/%2B${number.slice(1)}`, { key: team.apiKey });
    assert.equal(got.status, 200);
    assert.equal(got.json.entry.phone_number, number);
    const local = await api.request('GET', `/api/v1/do-not-call/${number.slice(2)}`, { key: team.apiKey });
    assert.equal(local.json.entry.phone_number, number);
    const removed = await api.request('DELETE', `/api/v1/do-not-call/%2B${number.slice(1)}`, { key: team.apiKey });
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.json, { success: true, phone_number: number });
    for (const method of ['GET', 'DELETE']) {
      const res = await api.request(method, path(number), { key: team.apiKey });
      assert.equal(res.status, 404, method);
      assert.deepEqual(res.json, { success: false, message: 'Phone number is not on the do-not-call list' });
    }
    const invalid = await api.request('GET', '/api/v1/do-not-call/abc', { key: team.apiKey });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.message, 'Invalid request: phone_number is not a valid phone number');
  });

  test('team isolation: another team’s entry is not found, cannot be removed, and the same number can be listed by both', async () => {
    const number = calleeNumber('4324');
    await add(team, { phone_number: number, reason: 'mine' });
    assert.equal((await api.request('GET', path(number), { key: other.apiKey })).status, 404);
    assert.equal((await api.request('DELETE', path(number), { key: other.apiKey })).status, 404);
    assert.equal((await api.request('GET', path(number), { key: team.apiKey })).status, 200);
    const theirs = await add(other, { phone_number: number, reason: 'theirs' });
    assert.equal(theirs.status, 201);
    assert.equal((await api.request('GET', path(number), { key: team.apiKey })).json.entry.reason, 'mine');
    const list = await api.request('GET', '/api/v1/do-not-call?limit=500', { key: other.apiKey });
    assert.deepEqual(list.json.entries.map((e: { phone_number: string }) => e.phone_number), [number]);
  });
});

describe('GET /api/v1/do-not-call', () => {
  test('newest first, keyset paging over entries sharing one timestamp, total', async () => {
    const t = await createTestTeam(api.pool);
    await api.pool.query(
      `INSERT INTO do_not_call (team_id, phone_number, source, created_at)
       SELECT $1, '+1415555' || lpad(g::text, 4, '0'), 'api', '2026-01-01T00:00:00Z' FROM generate_series(1, 250) g`,
      [t.teamId],
    );
    const newest = await add(t, { phone_number: '+14155559999' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { status: number; json: any } = await api.request('GET', `/api/v1/do-not-call?limit=37${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: t.apiKey });
      assert.equal(res.status, 200);
      assert.equal(res.json.meta.total, 251);
      assert.equal(res.json.meta.limit, 37);
      seen.push(...res.json.entries.map((e: { phone_number: string }) => e.phone_number));
      cursor = res.json.meta.next_cursor;
    } while (cursor);
    assert.equal(seen.length, 251);
    assert.equal(new Set(seen).size, 251);
    assert.equal(seen[0], newest.json.entry.phone_number);
    const first = await api.request('GET', '/api/v1/do-not-call', { key: t.apiKey });
    assert.equal(first.json.meta.limit, 100);
    for (const [query, message] of [
      ['?limit=0', 'Invalid request: limit must be an integer from 1 to 500'],
      ['?limit=abc', 'Invalid request: limit must be an integer from 1 to 500'],
      ['?cursor=yesterday', 'Invalid request: cursor must be the meta.next_cursor of a previous page (a date-time)'],
    ]) {
      const res = await api.request('GET', `/api/v1/do-not-call${query}`, { key: t.apiKey });
      assert.equal(res.status, 400, query);
      assert.equal(res.json.message, message);
    }
  });

  test('every endpoint is in the OpenAPI document and needs an API key', async () => {
    const doc = await api.request('GET', '/api/v1/openapi.json');
    assert.deepEqual(Object.keys(doc.json.paths['/api/v1/do-not-call']).sort(), ['get', 'post']);
    assert.deepEqual(Object.keys(doc.json.paths['/api/v1/do-not-call/{phone_number}']).sort(), ['delete', 'get']);
    assert.ok(doc.json.components.schemas.DoNotCallEntry);
    assert.equal((await api.request('GET', '/api/v1/do-not-call')).status, 401);
  });
});
