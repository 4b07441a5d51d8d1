// The API's access log (one `request` line per request) read as an operator reads it: the app
// logs to a stream, and no credential a client presented may appear in what was written.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLogger } from '../../src/logging/logger.js';
import { createHook, type CreatedHook } from '../../src/services/hooks.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const MEDIA_EDGE_SECRET = 'access-log-media-edge-secret-0123456789';

let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let hook: CreatedHook;
let written = '';

before(async () => {
  env = await createTimeSkippingEnv();
  const stream = new Writable({
    write(chunk, _enc, done) {
      written += String(chunk);
      done();
    },
  });
  app = await startTestApi({ temporal: env.client, logger: createLogger('info', stream), config: { MEDIA_EDGE_SECRET, RECORDING_LINK_SECRET: 'access-log-recording-link-secret-0123456789', RATE_LIMITS_ENABLED: 'false' } });
  team = await createTestTeam(app.pool);
  hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'none' } });
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

/** The access-log lines written while `run` ran. */
async function accessLines(run: () => Promise<unknown>): Promise<any[]> {
  const start = written.length;
  await run();
  return written
    .slice(start)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'request');
}

test('a hook request is logged as /api/v1/hooks/wh_…<last 4 of the token>; the token is written nowhere', async () => {
  const token = hook.path.slice('/api/v1/hooks/'.length);
  const lines = await accessLines(async () => {
    const res = await app.request('POST', hook.path, { body: { phone_number: '+14155550123' } });
    assert.equal(res.status, 202);
  });
  assert.equal(lines.length, 1);
  assert.equal(lines[0].path, `/api/v1/hooks/wh_…${token.slice(-4)}`);
  assert.equal(lines[0].status, 202);
  assert.equal(lines[0].method, 'POST');
  assert.ok(!written.includes(token), 'the hook token is not in the log');
  assert.ok(!written.includes(token.slice(3, -4)), 'no part of the token but its last 4 characters');
});

test('an unknown or revoked token is redacted the same way (it may be a mistyped real one)', async () => {
  const guess = `wh_${randomBytes(24).toString('base64url')}`;
  const lines = await accessLines(async () => {
    assert.equal((await app.request('POST', `/api/v1/hooks/${guess}`, { body: {} })).status, 404);
  });
  assert.equal(lines[0].path, `/api/v1/hooks/wh_…${guess.slice(-4)}`);
  assert.ok(!written.includes(guess));
});

test('API keys, the media edge secret, session tokens and recording-link signatures are never logged', async () => {
  const wrongKey = `va${'k'.repeat(10)}_${randomBytes(32).toString('base64url')}`;
  const sessionToken = `wst_${randomBytes(32).toString('base64url')}`;
  const signature = randomBytes(32).toString('base64url');
  const lines = await accessLines(async () => {
    assert.equal((await app.request('GET', '/api/v1/calls', { key: team.apiKey })).status, 200);
    assert.equal((await app.request('GET', '/api/v1/calls', { key: wrongKey })).status, 401);
    const redeem = await app.request('POST', '/internal/v1/web-sessions/redeem', {
      headers: { Authorization: `Bearer ${MEDIA_EDGE_SECRET}` },
      body: { session_token: sessionToken },
    });
    assert.equal(redeem.status, 404);
    const link = await app.request('GET', `/api/v1/recordings/${randomUUID()}/audio?expires=${Math.floor(Date.now() / 1000) + 60}&signature=${signature}`);
    assert.ok(link.status >= 400 && link.status < 500, `a made-up link is refused (${link.status})`);
  });
  assert.equal(lines.length, 4);
  for (const credential of [team.apiKey, wrongKey, MEDIA_EDGE_SECRET, sessionToken, signature]) {
    assert.ok(!written.includes(credential), `${credential.slice(0, 8)}… must not be logged`);
  }
});
