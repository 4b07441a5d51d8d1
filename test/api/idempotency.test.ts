import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApiError, notFound } from '../../src/api/errors.js';
import { deriveIdempotentId, idempotentId, markChanged, requestFingerprint } from '../../src/api/middleware/idempotency.js';
import { buildOpenApiDocument } from '../../src/api/openapi/document.js';
import { defineRoute, type RouteDefinition } from '../../src/api/route.js';
import { allRoutes } from '../../src/api/routes.js';
import { z } from '../../src/api/schemas.js';
import { claimIdempotencyKey, findIdempotencyKey, pruneExpiredIdempotencyKeys } from '../../src/db/repositories/idempotency.js';
import { createTestTeam, startTestApi, type TestApi, type TestResponse, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

// Test-only create endpoints. Each handler run is counted per `name`, so a test can tell
// "ran again" from "replayed". `next` makes the next run fail in a chosen way; `gates`
// hold a run in progress until the test opens them.
const runs = new Map<string, number>();
const next = new Map<string, 'unauthorized' | 'forbidden' | 'rateLimited' | 'server' | 'serverAfterChange' | 'notFound'>();
const gates = new Map<string, Promise<void>>();

function gate(name: string): () => void {
  let open!: () => void;
  gates.set(name, new Promise<void>((resolve) => (open = resolve)));
  return () => {
    gates.delete(name);
    open();
  };
}

const createThing = defineRoute({
  method: 'post',
  path: '/api/v1/test-idempotent-create',
  operationId: 'testIdempotentCreate',
  summary: 'test only',
  tags: ['Test'],
  auth: 'apiKey',
  request: { body: z.object({ name: z.string(), size: z.number().optional(), tags: z.array(z.string()).optional() }) },
  responses: { 201: { description: 'created' }, 404: { description: 'not found' }, 409: { description: 'A thing with that name already exists' } },
  handler: async ({ body, ctx }) => {
    const run = (runs.get(body.name) ?? 0) + 1;
    runs.set(body.name, run);
    await gates.get(body.name);
    const failure = next.get(body.name);
    next.delete(body.name);
    if (failure === 'unauthorized') throw new ApiError(401, 'Invalid API key');
    if (failure === 'forbidden') throw new ApiError(403, 'API key has been revoked');
    if (failure === 'rateLimited') throw new ApiError(429, 'Team is at its concurrent call limit of 1', { max_concurrent: 1 });
    if (failure === 'server') throw new Error('boom before any change');
    if (failure === 'serverAfterChange') {
      markChanged(ctx);
      throw new Error('boom after a change');
    }
    if (failure === 'notFound') throw notFound('script_id not found or does not belong to your team');
    const id = idempotentId(ctx) ?? randomUUID();
    return {
      status: 201,
      headers: { Location: `/api/v1/things/${id}` },
      body: { success: true, thing_id: id, second_id: idempotentId(ctx, 'second') ?? null, run, nonce: Math.random(), name: body.name },
    };
  },
});

const actOnThing = defineRoute({
  method: 'post',
  path: '/api/v1/test-idempotent-things/{id}/act',
  operationId: 'testIdempotentAct',
  summary: 'test only',
  tags: ['Test'],
  auth: 'apiKey',
  request: { params: z.object({ id: z.string() }) },
  responses: { 200: { description: 'acted' } },
  handler: async ({ params }) => ({ body: { success: true, acted_on: params.id, nonce: Math.random() } }),
});

const testRoutes: RouteDefinition[] = [createThing, actOnThing];

let env: TestWorkflowEnvironment;
let app: TestApi;
let staleApp: TestApi;
let limitedApp: TestApi;
let team: TestTeam;
let otherTeam: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, routes: [...allRoutes(), ...testRoutes], config: { RATE_LIMITS_ENABLED: 'false' } });
  // A second instance over the same database whose in-progress records go stale after 1 s.
  staleApp = await startTestApi({ temporal: env.client, routes: [...allRoutes(), ...testRoutes], config: { RATE_LIMITS_ENABLED: 'false', IDEMPOTENCY_STALE_AFTER_SECONDS: '1' } });
  // Rate limits on, three writes per key and minute.
  limitedApp = await startTestApi({ temporal: env.client, routes: [...allRoutes(), ...testRoutes], config: { RATE_LIMIT_PER_KEY_WRITES: '3' } });
  team = await createTestTeam(app.pool);
  otherTeam = await createTestTeam(app.pool);
});

after(async () => {
  await app?.close();
  await staleApp?.close();
  await limitedApp?.close();
  await env?.teardown();
});

const uniqueName = (label: string) => `${label}-${randomUUID()}`;

function create(body: unknown, key: string | undefined, opts: { team?: TestTeam; api?: TestApi; rawBody?: string } = {}): Promise<TestResponse> {
  const headers: Record<string, string> = key === undefined ? {} : { 'Idempotency-Key': key };
  const api = opts.api ?? app;
  return api.request('POST', '/api/v1/test-idempotent-create', { key: (opts.team ?? team).apiKey, body, rawBody: opts.rawBody, headers });
}

function assertReplayOf(replayed: TestResponse, original: TestResponse): void {
  assert.equal(replayed.status, original.status);
  assert.equal(replayed.text, original.text);
  assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
}

describe('replaying a kept response', () => {
  test('the same key and body answer the kept status and body byte for byte with Idempotent-Replayed: true', async () => {
    const name = uniqueName('replay');
    const key = randomUUID();
    const first = await create({ name, size: 3 }, key);
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const second = await create({ name, size: 3 }, key);
    assertReplayOf(second, first);
    assert.equal(second.headers.get('content-type'), first.headers.get('content-type'));
    assert.equal(second.headers.get('location'), first.headers.get('location'));
    assert.equal(runs.get(name), 1);
  });

  test('key order and whitespace of the body do not matter', async () => {
    const name = uniqueName('canonical');
    const key = randomUUID();
    const first = await create(undefined, key, { rawBody: `{"name":"${name}","size":1,"tags":["a","b"]}` });
    const second = await create(undefined, key, { rawBody: `{\n  "tags": [ "a", "b" ],\n  "size": 1.0,\n  "name": "${name}"\n}` });
    assertReplayOf(second, first);
    assert.equal(runs.get(name), 1);
  });

  test('a request without the header runs every time', async () => {
    const name = uniqueName('no-key');
    const first = await create({ name }, undefined);
    const second = await create({ name }, undefined);
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.notEqual(first.json.thing_id, second.json.thing_id);
    assert.equal(second.headers.get('idempotent-replayed'), null);
    assert.equal(runs.get(name), 2);
  });

  test('a kept 404 is replayed as the same 404', async () => {
    const name = uniqueName('not-found');
    const key = randomUUID();
    next.set(name, 'notFound');
    const first = await create({ name }, key);
    assert.equal(first.status, 404);
    assert.deepEqual(first.json, { success: false, message: 'script_id not found or does not belong to your team' });
    const second = await create({ name }, key);
    assertReplayOf(second, first);
    assert.equal(runs.get(name), 1);
  });

  test('a replay carries its own rate-limit headers, not those of the kept response', async () => {
    const limitedTeam = await createTestTeam(app.pool);
    const name = uniqueName('limit-headers');
    const key = randomUUID();
    const first = await create({ name }, key, { api: limitedApp, team: limitedTeam });
    assert.equal(first.headers.get('x-ratelimit-remaining'), '2');
    const second = await create({ name }, key, { api: limitedApp, team: limitedTeam });
    assertReplayOf(second, first);
    assert.equal(second.headers.get('x-ratelimit-remaining'), '1');
  });

  test('a record past its 24 hours is forgotten: the same key runs again', async () => {
    const name = uniqueName('expired');
    const key = randomUUID();
    const first = await create({ name }, key);
    await app.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE team_id = $1 AND idempotency_key = $2`, [team.teamId, key]);
    const second = await create({ name }, key);
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), null);
    assert.notEqual(second.text, first.text);
    assert.equal(runs.get(name), 2);
    const record = await findIdempotencyKey(app.pool, { teamId: team.teamId, endpoint: 'POST /api/v1/test-idempotent-create', key });
    assert.ok(record && record.expires_at.getTime() > Date.now() + 23 * 3600_000, 'a fresh 24-hour record');
  });
});

describe('conflicting use of a key', () => {
  test('the same key with a different body answers 422 and runs nothing', async () => {
    const name = uniqueName('different');
    const key = randomUUID();
    await create({ name, size: 1 }, key);
    const res = await create({ name, size: 2 }, key);
    assert.equal(res.status, 422);
    assert.deepEqual(res.json, { success: false, message: 'Idempotency-Key was already used with a different request body' });
    assert.equal(res.headers.get('idempotent-replayed'), null);
    assert.equal(runs.get(name), 1);
  });

  test('the same key on another path of the same route answers 422', async () => {
    const key = randomUUID();
    const first = await app.request('POST', '/api/v1/test-idempotent-things/a/act', { key: team.apiKey, headers: { 'Idempotency-Key': key } });
    assert.equal(first.status, 200);
    const again = await app.request('POST', '/api/v1/test-idempotent-things/a/act', { key: team.apiKey, headers: { 'Idempotency-Key': key } });
    assertReplayOf(again, first);
    const other = await app.request('POST', '/api/v1/test-idempotent-things/b/act', { key: team.apiKey, headers: { 'Idempotency-Key': key } });
    assert.equal(other.status, 422);
  });

  test('while the first request still runs, the same key answers 409; afterwards the kept response', async () => {
    const name = uniqueName('in-flight');
    const key = randomUUID();
    const open = gate(name);
    const first = create({ name }, key);
    while ((runs.get(name) ?? 0) === 0) await new Promise((r) => setTimeout(r, 10));
    const during = await create({ name }, key);
    assert.equal(during.status, 409);
    assert.deepEqual(during.json, { success: false, message: 'A request with this Idempotency-Key is still in progress' });
    open();
    const done = await first;
    assert.equal(done.status, 201);
    assertReplayOf(await create({ name }, key), done);
    assert.equal(runs.get(name), 1);
  });

  test('50 concurrent requests with one key and one body run the handler exactly once', async () => {
    const name = uniqueName('race');
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 50 }, () => create({ name }, key)));
    assert.equal(runs.get(name), 1);
    const originals = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
    assert.equal(originals.length, 1);
    for (const a of answers) {
      if (a === originals[0]) continue;
      if (a.status === 409) assert.equal(a.json.message, 'A request with this Idempotency-Key is still in progress');
      else assertReplayOf(a, originals[0]);
    }
  });
});

describe('many keys at once', () => {
  test('80 concurrent requests over 20 keys (claims and completions sent in shared batches) run each key once', async () => {
    const names = Array.from({ length: 20 }, (_, i) => uniqueName(`batch-${i}`));
    const keys = names.map(() => randomUUID());
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) => create({ name: names[i % 20] }, keys[i % 20]).then((res) => ({ i: i % 20, res }))),
    );
    for (let k = 0; k < 20; k++) {
      assert.equal(runs.get(names[k]), 1, `key ${k} ran once`);
      const mine = answers.filter((a) => a.i === k).map((a) => a.res);
      const originals = mine.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
      assert.equal(originals.length, 1);
      for (const r of mine) if (r !== originals[0] && r.status !== 409) assertReplayOf(r, originals[0]);
    }
    // Afterwards every key replays.
    for (let k = 0; k < 20; k++) assert.equal((await create({ name: names[k] }, keys[k])).headers.get('idempotent-replayed'), 'true');
  });
});

describe('answers that are not kept', () => {
  test('a 400 from validation is not kept: the corrected request with the same key runs', async () => {
    const name = uniqueName('invalid');
    const key = randomUUID();
    const bad = await create({ name, size: 'big' }, key);
    assert.equal(bad.status, 400);
    const good = await create({ name, size: 5 }, key);
    assert.equal(good.status, 201);
    assert.equal(good.headers.get('idempotent-replayed'), null);
    assert.equal(runs.get(name), 1);
  });

  test('a 400 for a body that is not JSON is not kept', async () => {
    const name = uniqueName('not-json');
    const key = randomUUID();
    const bad = await create(undefined, key, { rawBody: '{"name": ' });
    assert.equal(bad.status, 400);
    assert.equal((await create({ name }, key)).status, 201);
  });

  test('a 401 from authentication is not kept', async () => {
    const name = uniqueName('unauthenticated');
    const key = randomUUID();
    const res = await app.request('POST', '/api/v1/test-idempotent-create', { key: `${team.apiKey}x`, body: { name }, headers: { 'Idempotency-Key': key } });
    assert.equal(res.status, 401);
    const good = await create({ name }, key);
    assert.equal(good.status, 201);
    assert.equal(good.headers.get('idempotent-replayed'), null);
  });

  test('a 429 from the rate limits keeps nothing under the key', async () => {
    const limitedTeam = await createTestTeam(app.pool);
    const key = randomUUID();
    for (let i = 0; i < 3; i++) assert.equal((await create({ name: uniqueName('limit') }, undefined, { api: limitedApp, team: limitedTeam })).status, 201);
    const limited = await create({ name: uniqueName('limited') }, key, { api: limitedApp, team: limitedTeam });
    assert.equal(limited.status, 429);
    assert.equal(await findIdempotencyKey(app.pool, { teamId: limitedTeam.teamId, endpoint: 'POST /api/v1/test-idempotent-create', key }), undefined);
  });

  const released: Array<['unauthorized' | 'forbidden' | 'rateLimited' | 'server', number]> = [
    ['unauthorized', 401],
    ['forbidden', 403],
    ['rateLimited', 429],
    ['server', 500],
  ];
  for (const [failure, status] of released) {
    test(`a ${status} from the handler${status === 500 ? ' before any change' : ''} is not kept: the same request runs again`, async () => {
      const name = uniqueName(failure);
      const key = randomUUID();
      next.set(name, failure);
      const first = await create({ name }, key);
      assert.equal(first.status, status);
      const second = await create({ name }, key);
      assert.equal(second.status, 201);
      assert.equal(second.headers.get('idempotent-replayed'), null);
      assert.equal(runs.get(name), 2);
    });
  }

  test('a 500 after the request changed something is kept and replayed', async () => {
    const name = uniqueName('changed');
    const key = randomUUID();
    next.set(name, 'serverAfterChange');
    const first = await create({ name }, key);
    assert.equal(first.status, 500);
    assert.deepEqual(first.json, { success: false, message: 'Internal server error' });
    const second = await create({ name }, key);
    assertReplayOf(second, first);
    assert.equal(runs.get(name), 1);
  });
});

describe('the Idempotency-Key header', () => {
  /** Sends a header value byte for byte (fetch refuses some of these). */
  function rawCreate(keyBytes: Buffer, body: unknown): Promise<{ status: number; json: any }> {
    const url = new URL(app.url);
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, path: '/api/v1/test-idempotent-create', method: 'POST' }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      // setHeader validates values; write the raw header through the latin1 path instead.
      req.setHeader('Authorization', `Bearer ${team.apiKey}`);
      req.setHeader('Content-Type', 'application/json');
      req.setHeader('Idempotency-Key', keyBytes.toString('latin1'));
      req.end(payload);
    });
  }

  const invalid: Array<[string, string]> = [
    ['an empty value', ''],
    ['256 characters', 'k'.repeat(256)],
  ];
  for (const [label, value] of invalid) {
    test(`${label} answers 400`, async () => {
      const name = uniqueName('bad-key');
      const res = await create({ name }, value);
      assert.equal(res.status, 400);
      assert.deepEqual(res.json, { success: false, message: 'Idempotency-Key must be 1 to 255 printable ASCII characters' });
      assert.equal(runs.get(name), undefined);
    });
  }

  test('a non-ASCII character answers 400', async () => {
    const name = uniqueName('latin1-key');
    const res = await rawCreate(Buffer.from('clé', 'latin1'), { name });
    assert.equal(res.status, 400);
    assert.equal(res.json.message, 'Idempotency-Key must be 1 to 255 printable ASCII characters');
    assert.equal(runs.get(name), undefined);
  });

  test('a control character answers 400', async () => {
    const name = uniqueName('tab-key');
    const res = await rawCreate(Buffer.from('a\tb', 'latin1'), { name });
    assert.equal(res.status, 400);
    assert.equal(runs.get(name), undefined);
  });

  test('255 printable characters including spaces and punctuation are accepted', async () => {
    const name = uniqueName('long-key');
    const key = `a b~!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}`.padEnd(255, 'z');
    const first = await create({ name }, key);
    assert.equal(first.status, 201);
    assertReplayOf(await create({ name }, key), first);
  });

  test('keys of one team are invisible to another: the same key and body run for each', async () => {
    const name = uniqueName('teams');
    const key = randomUUID();
    const mine = await create({ name }, key);
    const theirs = await create({ name }, key, { team: otherTeam });
    assert.equal(mine.status, 201);
    assert.equal(theirs.status, 201);
    assert.equal(theirs.headers.get('idempotent-replayed'), null);
    assert.notEqual(mine.json.thing_id, theirs.json.thing_id);
    assert.equal(runs.get(name), 2);
  });

  test('a key is scoped to its route: the same key on another route runs', async () => {
    const name = uniqueName('routes');
    const key = randomUUID();
    assert.equal((await create({ name }, key)).status, 201);
    const other = await app.request('POST', '/api/v1/test-idempotent-things/x/act', { key: team.apiKey, headers: { 'Idempotency-Key': key } });
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('idempotent-replayed'), null);
  });
});

describe('deterministic resource ids', () => {
  const endpoint = 'POST /api/v1/test-idempotent-create';
  const recordCreatedAt = async (key: string, who: TestTeam = team) => (await findIdempotencyKey(app.pool, { teamId: who.teamId, endpoint, key }))!.created_at;

  test('the id given to the handler is derived from team, route, key and the record, and differs per purpose', async () => {
    const name = uniqueName('ids');
    const key = randomUUID();
    const res = await create({ name }, key);
    const ref = { teamId: team.teamId, endpoint, key };
    const createdAt = await recordCreatedAt(key);
    assert.equal(res.json.thing_id, deriveIdempotentId(ref, createdAt));
    assert.equal(res.json.second_id, deriveIdempotentId(ref, createdAt, 'second'));
    assert.notEqual(res.json.thing_id, res.json.second_id);
    assert.match(res.json.thing_id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.ok(z.uuid().safeParse(res.json.thing_id).success);
  });

  test('a retry after a released failure gets the same id, even with a corrected body', async () => {
    const name = uniqueName('same-id');
    const key = randomUUID();
    next.set(name, 'server');
    const failed = await create({ name, size: 1 }, key);
    assert.equal(failed.status, 500);
    assert.equal((await findIdempotencyKey(app.pool, { teamId: team.teamId, endpoint, key }))?.state, 'released');
    const retry = await create({ name, size: 2 }, key);
    assert.equal(retry.status, 201);
    assert.equal(retry.json.thing_id, deriveIdempotentId({ teamId: team.teamId, endpoint, key }, await recordCreatedAt(key)));
    assert.equal(runs.get(name), 2);
  });

  test('a key reused after its record expired gets a new id', async () => {
    const name = uniqueName('expired-id');
    const key = randomUUID();
    const first = await create({ name }, key);
    await app.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE team_id = $1 AND idempotency_key = $2`, [team.teamId, key]);
    const second = await create({ name }, key);
    assert.equal(second.status, 201);
    assert.notEqual(second.json.thing_id, first.json.thing_id);
  });
});

describe('a crash between running the request and keeping its response', () => {
  test('an in-progress record older than the stale time is taken over by the next request', async () => {
    const name = uniqueName('takeover');
    const key = randomUUID();
    // The first run hangs past the stale time, as a crashed process would never finish.
    const open = gate(name);
    const stuck = create({ name }, key, { api: staleApp });
    while ((runs.get(name) ?? 0) === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 1200));
    gates.delete(name);
    const takeover = await create({ name }, key, { api: staleApp });
    assert.equal(takeover.status, 201);
    assert.equal(takeover.headers.get('idempotent-replayed'), null);
    assert.equal(runs.get(name), 2);
    // Both runs used the same resource id, so the endpoint's own uniqueness catches doubles.
    open();
    const late = await stuck;
    assert.equal(late.json.thing_id, takeover.json.thing_id);
    // The late first run does not overwrite what the take-over kept.
    assertReplayOf(await create({ name }, key, { api: staleApp }), takeover);
  });

  test('a record left in progress by a process that died is taken over once stale', async () => {
    const name = uniqueName('dead-process');
    const key = randomUUID();
    const body = { name };
    // What a process that crashed right after claiming the key leaves behind.
    const claimed = await claimIdempotencyKey(app.pool, {
      teamId: team.teamId,
      endpoint: 'POST /api/v1/test-idempotent-create',
      key,
      requestHash: requestFingerprint({ params: {}, query: {}, body }),
      attemptId: randomUUID(),
      ttlSeconds: 86_400,
      staleAfterSeconds: 1,
    });
    assert.equal(claimed?.reclaimed, false);
    assert.equal((await findIdempotencyKey(app.pool, { teamId: team.teamId, endpoint: 'POST /api/v1/test-idempotent-create', key }))?.state, 'in_progress');
    const soon = await create(body, key, { api: staleApp });
    assert.equal(soon.status, 409, 'not stale yet');
    await new Promise((r) => setTimeout(r, 1100));
    const later = await create(body, key, { api: staleApp });
    assert.equal(later.status, 201);
    assert.equal(later.headers.get('idempotent-replayed'), null);
    assert.equal(runs.get(name), 1);
    assertReplayOf(await create(body, key, { api: staleApp }), later);
  });

  test('a stale in-progress record with a different body answers 422, not a take-over', async () => {
    const name = uniqueName('stale-different');
    const key = randomUUID();
    const open = gate(name);
    const stuck = create({ name, size: 1 }, key, { api: staleApp });
    while ((runs.get(name) ?? 0) === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 1100));
    const res = await create({ name, size: 2 }, key, { api: staleApp });
    assert.equal(res.status, 422);
    open();
    await stuck;
  });
});

describe('pruning expired records', () => {
  test('removes at most the given number of expired records and never a live one', async () => {
    const pruneTeam = await createTestTeam(app.pool);
    const claim = (key: string) =>
      claimIdempotencyKey(app.pool, {
        teamId: pruneTeam.teamId,
        endpoint: 'POST /api/v1/test-idempotent-create',
        key,
        requestHash: 'h',
        attemptId: randomUUID(),
        ttlSeconds: 3600,
        staleAfterSeconds: 60,
      });
    for (let i = 0; i < 5; i++) await claim(`expired-${i}`);
    await claim('live');
    await app.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 hour' WHERE team_id = $1 AND idempotency_key LIKE 'expired-%'`, [pruneTeam.teamId]);
    // Other tests' expired rows may be pruned too; loop until none of ours remain.
    const first = await pruneExpiredIdempotencyKeys(app.pool, 2);
    assert.equal(first, 2);
    while ((await pruneExpiredIdempotencyKeys(app.pool, 2)) > 0);
    const { rows } = await app.pool.query<{ idempotency_key: string }>('SELECT idempotency_key FROM idempotency_keys WHERE team_id = $1', [pruneTeam.teamId]);
    assert.deepEqual(rows.map((r) => r.idempotency_key), ['live']);
  });

  test('the prune query reads the expires_at index, not the whole table', async () => {
    const client = await app.pool.connect();
    try {
      await client.query('BEGIN');
      // A planner on a tiny table prefers a sequential scan; forbid it to see that the index can serve.
      await client.query('SET LOCAL enable_seqscan = off');
      const { rows } = await client.query(
        `EXPLAIN DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT 10 FOR UPDATE SKIP LOCKED))`,
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      assert.match(plan, /idempotency_keys_expires_at_idx/);
      assert.match(plan, /Tid Scan/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

describe('the OpenAPI document', () => {
  test('documents Idempotency-Key, 409, 422 and Idempotent-Replayed on API-key POSTs only', async () => {
    const doc = JSON.parse(JSON.stringify(buildOpenApiDocument([...allRoutes(), ...testRoutes]))) as any;
    const post = doc.paths['/api/v1/test-idempotent-create'].post;
    const header = post.parameters.find((p: any) => p.name === 'Idempotency-Key');
    assert.equal(header.in, 'header');
    assert.equal(header.required, false);
    assert.equal(header.schema.maxLength, 255);
    assert.match(post.responses['409'].description, /A thing with that name already exists; or a request with this Idempotency-Key is still in progress/);
    assert.match(post.responses['422'].description, /Idempotency-Key was already used with a different request body/);
    assert.ok(post.responses['201'].headers['Idempotent-Replayed']);
    assert.ok(post.responses['404'].headers['Idempotent-Replayed']);
    assert.match(post.responses['400'].description, /Idempotency-Key must be 1 to 255 printable ASCII characters/);
    for (const status of ['400', '401', '403', '429']) assert.equal(post.responses[status].headers?.['Idempotent-Replayed'], undefined, `a ${status} is never replayed`);
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const documented = (op.parameters ?? []).some((p: any) => p.name === 'Idempotency-Key');
        const applies = method === 'post' && path.startsWith('/api/v1/') && (op.security ?? []).some((s: any) => 'bearerAuth' in s);
        assert.equal(documented, applies, `${method.toUpperCase()} ${path}`);
      }
    }
  });

  test('the served document carries the header on every API-key POST of the service', async () => {
    const res = await app.request('GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    for (const [path, item] of Object.entries<any>(res.json.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const documented = (op.parameters ?? []).some((p: any) => p.name === 'Idempotency-Key');
        const applies = method === 'post' && path.startsWith('/api/v1/') && (op.security ?? []).some((s: any) => 'bearerAuth' in s);
        assert.equal(documented, applies, `${method.toUpperCase()} ${path}`);
      }
    }
  });
});
