import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { defineRoute } from '../../src/api/route.js';
import { revokeApiKey } from '../../src/db/repositories/apiKeys.js';
import { createPool } from '../../src/db/pool.js';
import { createLogger } from '../../src/logging/logger.js';
import { startApi } from '../../src/server.js';
import { createTestTeam, startTestApi, testConfig, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const whoAmI = defineRoute({
  method: 'get',
  path: '/api/v1/test-whoami',
  operationId: 'testWhoAmI',
  summary: 'test only',
  tags: ['Test'],
  auth: 'apiKey',
  responses: { 200: { description: 'the caller' } },
  handler: async ({ auth }) => ({ body: { success: true, team_id: auth.teamId, key_id: auth.keyId } }),
});

let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let otherTeam: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, routes: [whoAmI], config: { KEY_LAST_USED_FLUSH_MS: '100' } });
  team = await createTestTeam(app.pool);
  otherTeam = await createTestTeam(app.pool);
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

const call = (headers: Record<string, string>) => app.request('GET', '/api/v1/test-whoami', { headers });

describe('API key authentication', () => {
  const cases: Array<[string, Record<string, string>, number, string]> = [
    ['no Authorization header', {}, 401, 'Missing or malformed Authorization header'],
    ['a Basic header', { Authorization: 'Basic abc' }, 401, 'Missing or malformed Authorization header'],
    ['a scheme glued to the key', { Authorization: 'Bearerabc_def' }, 401, 'Missing or malformed Authorization header'],
    // HTTP clients strip trailing whitespace, so "Bearer " reaches the server as "Bearer".
    ['"Bearer " with nothing after it', { Authorization: 'Bearer ' }, 401, 'API key is empty'],
    ['"Bearer" alone', { Authorization: 'Bearer' }, 401, 'API key is empty'],
    ['a key of no known prefix', { Authorization: 'Bearer vazzzzzzzzzzzz_nothing' }, 401, 'Invalid API key'],
    ['a value without a prefix separator', { Authorization: 'Bearer garbage' }, 401, 'Invalid API key'],
  ];
  for (const [name, headers, status, message] of cases) {
    test(`${name} answers ${status} "${message}"`, async () => {
      const res = await call(headers);
      assert.equal(res.status, status);
      assert.deepEqual(res.json, { success: false, message });
    });
  }

  test('a known prefix with the wrong secret answers 401 Invalid API key', async () => {
    const prefix = team.apiKey.slice(0, team.apiKey.indexOf('_'));
    const res = await call({ Authorization: `Bearer ${prefix}_not-the-secret` });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { success: false, message: 'Invalid API key' });
  });

  test('a valid key attaches its own team, never another', async () => {
    const mine = await call({ Authorization: `Bearer ${team.apiKey}` });
    assert.equal(mine.status, 200);
    assert.equal(mine.json.team_id, team.teamId);
    const theirs = await call({ Authorization: `Bearer ${otherTeam.apiKey}` });
    assert.equal(theirs.json.team_id, otherTeam.teamId);
    assert.notEqual(mine.json.team_id, theirs.json.team_id);
  });

  test('a revoked key answers 403 API key has been revoked, at once', async () => {
    const victim = await createTestTeam(app.pool);
    assert.equal((await call({ Authorization: `Bearer ${victim.apiKey}` })).status, 200);
    await revokeApiKey(app.pool, victim.keyId);
    const res = await call({ Authorization: `Bearer ${victim.apiKey}` });
    assert.equal(res.status, 403);
    assert.deepEqual(res.json, { success: false, message: 'API key has been revoked' });
  });

  test('a database that cannot be reached during lookup answers 503 naming it, with Retry-After (not 401: the key may be good)', async () => {
    const deadPool = createPool('postgres://x:y@127.0.0.1:1/none', 1);
    const api = await startApi({ config: testConfig(), pool: deadPool, temporal: env.client, logger: createLogger('silent'), port: 0, routes: [whoAmI] });
    try {
      const { port } = api.server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/test-whoami`, { headers: { Authorization: `Bearer ${team.apiKey}` } });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      assert.deepEqual(await res.json(), { success: false, message: 'Service unavailable: the database cannot be reached; retry after Retry-After seconds' });
    } finally {
      await api.close();
      await deadPool.end();
    }
  });

  test('last_used_at is recorded shortly after use without a write on the request path', async () => {
    const fresh = await createTestTeam(app.pool);
    const before = await app.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [fresh.keyId]);
    assert.equal(before.rows[0].last_used_at, null);
    assert.equal((await call({ Authorization: `Bearer ${fresh.apiKey}` })).status, 200);
    let lastUsed: Date | null = null;
    for (let i = 0; i < 50 && !lastUsed; i++) {
      await new Promise((r) => setTimeout(r, 100));
      lastUsed = (await app.pool.query('SELECT last_used_at FROM api_keys WHERE id = $1', [fresh.keyId])).rows[0].last_used_at;
    }
    assert.ok(lastUsed instanceof Date, 'last_used_at set by the batched flush');
  });
});
