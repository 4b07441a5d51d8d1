// Secrets at rest (issue 23, item 7), over the real app and Postgres: the kept answers of
// idempotent requests that carry a session token, a call token, an endpoint secret or a
// signed link, and the signing secrets of hooks and webhook endpoints, are stored encrypted
// under SECRETS_ENCRYPTION_KEY. The raw rows are read to show the secret is not there in
// clear; the replay still answers byte for byte; rows written before encryption still
// work and are sealed at start-up; a rotation re-seals; a wrong key fails clearly.
// Tests that start an API under another key run on a database of their own: its start-up
// pass would otherwise touch the rows of every other test file.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { ConfigError, secretBox, type Config } from '../../src/config/index.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { completeCall, insertCall, markCallInProgress } from '../../src/db/repositories/calls.js';
import { getOrCreateSharedWebContact } from '../../src/db/repositories/contacts.js';
import { insertHook } from '../../src/db/repositories/hooks.js';
import { insertWebhookEndpoint } from '../../src/db/repositories/webhookEndpoints.js';
import { signWebhookBody } from '../../src/domain/hookSignature.js';
import { generateHookToken, hookPath } from '../../src/domain/hookTokens.js';
import { createLogger } from '../../src/logging/logger.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { localRecordingStore } from '../../src/recordings/local.js';
import { encodeWav } from '../../src/recordings/wav.js';
import { SecretBox } from '../../src/secrets/secretBox.js';
import { startApi, type RunningApi } from '../../src/server.js';
import { createHook, hookSecretContext } from '../../src/services/hooks.js';
import { sendWebhookDelivery } from '../../src/services/webhookDeliveries.js';
import { webhookEndpointSecretContext } from '../../src/services/webhookEndpoints.js';
import { hookRunFailedEvent, recordWebhookEvents } from '../../src/services/webhookEvents.js';
import { createTestTeam, testConfig, testPool, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { startWebhookReceiver, verifyStandardWebhook, type WebhookReceiver } from '../support/webhookReceiver.js';

const SETTINGS = {
  RATE_LIMITS_ENABLED: 'false',
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  MEDIA_EDGE_WS_URL: 'wss://edge.example.test/ws',
  MEDIA_EDGE_SIP_DOMAIN: 'edge.example.test',
  MEDIA_EDGE_SECRET: 'secrets-at-rest-media-edge-secret',
  RECORDING_LINK_SECRET: 'secrets-at-rest-recording-link-secret',
} as const;

const newKey = () => randomBytes(32).toString('base64');

interface Response {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

interface Api {
  url: string;
  config: Config;
  api: RunningApi;
  /** What the API logged (when started with `log: true`). */
  logs: Array<Record<string, any>>;
  request(method: string, path: string, opts?: { key?: string; body?: unknown; idempotencyKey?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

/** The API over `pool` with the test settings and `overrides`. */
async function startOn(pool: Pool, overrides: Partial<Record<keyof Config, string>> = {}, opts: { log?: boolean } = {}): Promise<Api> {
  const config = testConfig({ ...SETTINGS, RECORDINGS_DIR: recordingsDir, ...overrides });
  const logs: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const logger = opts.log ? pino({ level: 'info' }, sink) : createLogger('silent');
  const api = await startApi({ config, pool, temporal, logger, port: 0 });
  const url = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  return {
    url,
    config,
    api,
    logs,
    async request(method, p, { key, body, idempotencyKey, headers = {} } = {}) {
      const h: Record<string, string> = { ...headers };
      if (key) h.Authorization = `Bearer ${key}`;
      if (idempotencyKey) h['Idempotency-Key'] = idempotencyKey;
      if (body !== undefined) h['Content-Type'] = 'application/json';
      const res = await fetch(url + p, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    close: () => api.close(),
  };
}

/** A database of the test's own, migrated, dropped afterwards. */
async function ownDatabase(): Promise<{ pool: Pool; drop(): Promise<void> }> {
  const url = new URL(process.env.DATABASE_URL!);
  const name = `secrets_at_rest_${randomBytes(6).toString('hex')}`;
  const server = createPool(url.href, 1);
  await server.query(`CREATE DATABASE ${name}`);
  url.pathname = `/${name}`;
  const pool = createPool(url.href, 5);
  await migrate(pool);
  return {
    pool,
    async drop() {
      await pool.end();
      await server.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await server.end();
    },
  };
}

let env: TestWorkflowEnvironment;
let temporal: Client;
let pool: Pool;
let app: Api;
let team: TestTeam;
let recordingsDir: string;
let receiver: WebhookReceiver;

before(async () => {
  env = await createTimeSkippingEnv();
  temporal = env.client;
  pool = await testPool();
  recordingsDir = mkdtempSync(path.join(os.tmpdir(), 'secrets-at-rest-'));
  app = await startOn(pool);
  team = await createTestTeam(pool);
  receiver = await startWebhookReceiver(200);
});

after(async () => {
  await receiver?.close();
  await app?.close();
  await env?.teardown();
  rmSync(recordingsDir, { recursive: true, force: true });
});

const keptBody = async (db: Pool, teamId: string, key: string): Promise<string> =>
  (await db.query<{ response_body: string }>('SELECT response_body FROM idempotency_keys WHERE team_id = $1 AND idempotency_key = $2', [teamId, key])).rows[0].response_body;

/**
 * Sends the request twice with one Idempotency-Key: the kept row must hold none of the
 * secrets the answer carries (nor any of the answer in clear), and the replay must be the
 * first answer byte for byte.
 */
async function assertKeptSealed(path: string, body: unknown, secretsOf: (json: any) => string[], expectedStatus: number): Promise<Response> {
  const key = randomUUID();
  const first = await app.request('POST', path, { key: team.apiKey, body, idempotencyKey: key });
  assert.equal(first.status, expectedStatus, first.text);
  const secrets = secretsOf(first.json);
  assert.ok(secrets.length > 0 && secrets.every((s) => typeof s === 'string' && s.length >= 16), `the answer carries its secrets: ${first.text}`);

  const stored = await keptBody(pool, team.teamId, key);
  assert.match(stored, /^enc:v1:[0-9a-f]{8}:/);
  for (const secret of secrets) assert.ok(!stored.includes(secret), `the kept row holds ${secret} in clear`);
  assert.ok(!stored.includes('"success"'), 'the kept answer is sealed whole');

  const replay = await app.request('POST', path, { key: team.apiKey, body, idempotencyKey: key });
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.equal(replay.status, first.status);
  assert.equal(replay.text, first.text, 'the replay answers the first body byte for byte');
  return first;
}

describe('kept idempotent answers are stored encrypted and replayed byte for byte', () => {
  test('create-web-session: no session_token in the kept row', async () => {
    await assertKeptSealed('/api/v1/create-web-session', { script_id: team.scriptId }, (j) => [j.session_token, j.headers['X-Session-Token']], 201);
  });

  test('create-web-call: no X-Call-Token in the kept row', async () => {
    await assertKeptSealed('/api/v1/create-web-call', { script_id: team.scriptId }, (j) => [j.headers['X-Call-Token']], 201);
  });

  test('webhook endpoint create and rotate-secret: no signing secret in the kept rows', async () => {
    const created = await assertKeptSealed('/api/v1/webhook-endpoints', { url: receiver.url }, (j) => [j.secret, j.secret.slice('whsec_'.length)], 201);
    await assertKeptSealed(`/api/v1/webhook-endpoints/${created.json.endpoint.id}/rotate-secret`, undefined, (j) => [j.secret.slice('whsec_'.length)], 200);
  });

  test('recording link: no signed URL in the kept row', async () => {
    const callId = randomUUID();
    const contact = await getOrCreateSharedWebContact(pool, team.teamId);
    await insertCall(pool, { id: callId, teamId: team.teamId, contactId: contact.id, scriptId: team.scriptId, type: 'web', fromNumber: null, toNumber: null, scheduledTime: new Date(), progress: 'waiting_for_connection' });
    await markCallInProgress(pool, callId, new Date(Date.now() - 5000), 'in_conversation');
    await completeCall(pool, callId, { status: 'completed', endReason: 'agent_hangup', endTime: new Date(), progress: 'analysing' });
    await localRecordingStore(recordingsDir).put(recordingKey(team.teamId, callId), encodeWav(new Int16Array(320), { sampleRate: 16_000, channels: 2 }), 'audio/wav');
    await assertKeptSealed(`/api/v1/recordings/${callId}/link`, undefined, (j) => [j.url, new URL(j.url).searchParams.get('signature')!], 200);
  });

  test('a record kept before encryption (its body in clear) still replays as it is', async () => {
    const key = randomUUID();
    const first = await app.request('POST', '/api/v1/lists', { key: team.apiKey, body: { name: 'kept in clear' }, idempotencyKey: key });
    assert.equal(first.status, 201);
    await pool.query('UPDATE idempotency_keys SET response_body = $3 WHERE team_id = $1 AND idempotency_key = $2', [team.teamId, key, first.text]);
    const replay = await app.request('POST', '/api/v1/lists', { key: team.apiKey, body: { name: 'kept in clear' }, idempotencyKey: key });
    assert.deepEqual([replay.status, replay.headers.get('idempotent-replayed'), replay.text], [201, 'true', first.text]);
  });
});

describe('hook and webhook endpoint secrets are stored encrypted', () => {
  const hookRow = async (id: string) => (await pool.query<{ secret: string | null; token_hash: string }>('SELECT secret, token_hash FROM hooks WHERE id = $1', [id])).rows[0];
  const endpointRow = async (id: string) => (await pool.query<{ secret: string; previous_secret: string | null }>('SELECT secret, previous_secret FROM webhook_endpoints WHERE id = $1', [id])).rows[0];
  const postHook = (hookUrlPath: string, body: string, signature: string) =>
    app.request('POST', hookUrlPath, { headers: { 'Content-Type': 'application/json', 'X-Webhook-Signature': signature }, body: JSON.parse(body) });

  test('a signed hook’s secret is not in its row; a request signed with it is accepted, another signature refused', async () => {
    const secret = `whsec_${randomBytes(18).toString('base64url')}`;
    const hook = await createHook(pool, { teamId: team.teamId, secret, automation: { kind: 'none' } }, secretBox(app.config));
    const row = await hookRow(hook.id);
    assert.match(row.secret!, /^enc:v1:/);
    assert.ok(!row.secret!.includes(secret) && !row.secret!.includes(secret.slice(6)));
    const body = JSON.stringify({ phone_number: '+14155550123' });
    assert.equal((await postHook(hook.path, body, `sha256=${signWebhookBody(secret, body)}`)).status, 202);
    assert.equal((await postHook(hook.path, body, `sha256=${signWebhookBody('another secret', body)}`)).status, 401);
  });

  test('a hook stored before encryption (secret in clear) still verifies', async () => {
    const { token, hash } = generateHookToken();
    await insertHook(pool, { teamId: team.teamId, tokenHash: hash, secret: 'whsec_kept_in_clear', automation: { kind: 'none' } });
    const body = JSON.stringify({ phone_number: '+14155550123' });
    assert.equal((await postHook(hookPath(token), body, `sha256=${signWebhookBody('whsec_kept_in_clear', body)}`)).status, 202);
  });

  test('an endpoint’s secret and its rotated one are not in its row; deliveries are signed with both', async () => {
    const created = await app.request('POST', '/api/v1/webhook-endpoints', { key: team.apiKey, body: { url: receiver.url, events: ['hook_run.failed'] } });
    const { endpoint, secret: oldSecret } = created.json;
    const newSecret = (await app.request('POST', `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key: team.apiKey })).json.secret;
    const row = await endpointRow(endpoint.id);
    for (const stored of [row.secret, row.previous_secret!]) {
      assert.match(stored, /^enc:v1:/);
      for (const secret of [oldSecret, newSecret]) assert.ok(!stored.includes(secret.slice('whsec_'.length)));
    }
    const deliveries = await recordWebhookEvents(pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: team.teamId, error: 'x' })]);
    const delivery = deliveries.find((d) => d.endpoint_id === endpoint.id)!;
    receiver.received.length = 0;
    const result = await sendWebhookDelivery({ pool, config: app.config }, { deliveryId: delivery.id, attempt: 1 });
    assert.equal(result.status, 'succeeded');
    const [got] = receiver.received;
    assert.ok(verifyStandardWebhook(newSecret, got.headers, got.body) && verifyStandardWebhook(oldSecret, got.headers, got.body));
    await app.request('DELETE', `/api/v1/webhook-endpoints/${endpoint.id}`, { key: team.apiKey });
  });

  test('an endpoint stored before encryption (secret in clear) still signs its deliveries', async () => {
    const endpoint = (await insertWebhookEndpoint(pool, { id: randomUUID(), teamId: team.teamId, url: receiver.url, events: ['hook_run.failed'], description: null, secret: 'whsec_a2VwdCBpbiBjbGVhciwgMjQgYnl0ZXM=' }))!;
    const deliveries = await recordWebhookEvents(pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: team.teamId, error: 'x' })]);
    receiver.received.length = 0;
    const result = await sendWebhookDelivery({ pool, config: app.config }, { deliveryId: deliveries.find((d) => d.endpoint_id === endpoint.id)!.id, attempt: 1 });
    assert.equal(result.status, 'succeeded');
    assert.ok(verifyStandardWebhook('whsec_a2VwdCBpbiBjbGVhciwgMjQgYnl0ZXM=', receiver.received[0].headers, receiver.received[0].body));
    await app.request('DELETE', `/api/v1/webhook-endpoints/${endpoint.id}`, { key: team.apiKey });
  });
});

describe('start-up, rotation and a wrong key (on a database of their own)', () => {
  test('start-up seals the secrets stored in clear; the hook and the endpoint keep their secrets', async () => {
    const db = await ownDatabase();
    try {
      const own = await createTestTeam(db.pool);
      const { token, hash } = generateHookToken();
      const hook = await insertHook(db.pool, { teamId: own.teamId, tokenHash: hash, secret: 'whsec_hook_in_clear', automation: { kind: 'none' } });
      const endpointId = randomUUID();
      await insertWebhookEndpoint(db.pool, { id: endpointId, teamId: own.teamId, url: receiver.url, events: null, description: null, secret: 'whsec_current_in_clear' });
      await db.pool.query(`UPDATE webhook_endpoints SET previous_secret = 'whsec_previous_in_clear', previous_secret_expires_at = now() + interval '1 hour' WHERE id = $1`, [endpointId]);

      const started = await startOn(db.pool, {}, { log: true });
      try {
        const box = secretBox(started.config);
        const hookStored = (await db.pool.query('SELECT secret FROM hooks WHERE id = $1', [hook.id])).rows[0].secret;
        const endpointStored = (await db.pool.query('SELECT secret, previous_secret FROM webhook_endpoints WHERE id = $1', [endpointId])).rows[0];
        for (const stored of [hookStored, endpointStored.secret, endpointStored.previous_secret]) {
          assert.ok(stored.startsWith(`enc:v1:${box.keyId}:`) && !stored.includes('in_clear'), stored);
        }
        assert.equal(box.open(hookStored, hookSecretContext(hash)), 'whsec_hook_in_clear');
        assert.equal(box.open(endpointStored.secret, webhookEndpointSecretContext(endpointId)), 'whsec_current_in_clear');
        assert.equal(box.open(endpointStored.previous_secret, webhookEndpointSecretContext(endpointId)), 'whsec_previous_in_clear');
        assert.ok(started.logs.some((l) => l.msg === 'sealed stored secrets under the current SECRETS_ENCRYPTION_KEY' && l.sealed === 2));
        const body = '{"phone_number":"+14155550123"}';
        const res = await started.request('POST', hookPath(token), { headers: { 'Content-Type': 'application/json', 'X-Webhook-Signature': `sha256=${signWebhookBody('whsec_hook_in_clear', body)}` }, body: JSON.parse(body) });
        assert.equal(res.status, 202);
      } finally {
        await started.close();
      }
    } finally {
      await db.drop();
    }
  });

  test('rotation: with the old key in SECRETS_ENCRYPTION_KEY_PREVIOUS, start-up re-seals under the new key and kept answers of the old key replay', async () => {
    const db = await ownDatabase();
    try {
      const own = await createTestTeam(db.pool);
      const [oldKey, freshKey] = [newKey(), newKey()];
      const before = await startOn(db.pool, { SECRETS_ENCRYPTION_KEY: oldKey });
      const key = randomUUID();
      const created = await before.request('POST', '/api/v1/webhook-endpoints', { key: own.apiKey, body: { url: receiver.url }, idempotencyKey: key });
      const hook = await createHook(db.pool, { teamId: own.teamId, secret: 'whsec_rotated_hook', automation: { kind: 'none' } }, secretBox(before.config));
      await before.close();

      const after = await startOn(db.pool, { SECRETS_ENCRYPTION_KEY: freshKey, SECRETS_ENCRYPTION_KEY_PREVIOUS: oldKey });
      try {
        const fresh = new SecretBox(Buffer.from(freshKey, 'base64'));
        const endpointStored = (await db.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [created.json.endpoint.id])).rows[0].secret;
        const hookRowNow = (await db.pool.query('SELECT secret, token_hash FROM hooks WHERE id = $1', [hook.id])).rows[0];
        for (const stored of [endpointStored, hookRowNow.secret]) assert.ok(stored.startsWith(`enc:v1:${fresh.keyId}:`), `re-sealed under the new key: ${stored}`);
        assert.equal(fresh.open(endpointStored, webhookEndpointSecretContext(created.json.endpoint.id)), created.json.secret);
        assert.equal(fresh.open(hookRowNow.secret, hookSecretContext(hookRowNow.token_hash)), 'whsec_rotated_hook');
        const replay = await after.request('POST', '/api/v1/webhook-endpoints', { key: own.apiKey, body: { url: receiver.url }, idempotencyKey: key });
        assert.deepEqual([replay.status, replay.headers.get('idempotent-replayed'), replay.text], [201, 'true', created.text]);
      } finally {
        await after.close();
      }
    } finally {
      await db.drop();
    }
  });

  test('a wrong key: start-up logs it and changes nothing; a replay and a signed hook answer 500; the right key still works', async () => {
    const db = await ownDatabase();
    try {
      const own = await createTestTeam(db.pool);
      const right = await startOn(db.pool);
      try {
        const key = randomUUID();
        const first = await right.request('POST', '/api/v1/lists', { key: own.apiKey, body: { name: 'sealed' }, idempotencyKey: key });
        const hook = await createHook(db.pool, { teamId: own.teamId, secret: 'whsec_right_key', automation: { kind: 'none' } }, secretBox(right.config));
        const hookBefore = (await db.pool.query('SELECT secret FROM hooks WHERE id = $1', [hook.id])).rows[0].secret;

        const wrong = await startOn(db.pool, { SECRETS_ENCRYPTION_KEY: newKey() }, { log: true });
        try {
          const complaint = wrong.logs.find((l) => l.level === 50 && /SECRETS_ENCRYPTION_KEY/.test(l.msg));
          assert.ok(complaint, `an error naming the key at start-up: ${JSON.stringify(wrong.logs)}`);
          assert.equal(complaint.unreadable, 1);
          assert.equal((await db.pool.query('SELECT secret FROM hooks WHERE id = $1', [hook.id])).rows[0].secret, hookBefore, 'the row is left as it is');

          const replay = await wrong.request('POST', '/api/v1/lists', { key: own.apiKey, body: { name: 'sealed' }, idempotencyKey: key });
          assert.deepEqual([replay.status, replay.json], [500, { success: false, message: 'Internal server error' }]);
          const body = '{"a":1}';
          const signed = await wrong.request('POST', hook.path, { headers: { 'Content-Type': 'application/json', 'X-Webhook-Signature': `sha256=${signWebhookBody('whsec_right_key', body)}` }, body: { a: 1 } });
          assert.equal(signed.status, 500);
          const logged = wrong.logs.filter((l) => l.level === 50 && /neither SECRETS_ENCRYPTION_KEY/.test(JSON.stringify(l.err ?? {})));
          assert.ok(logged.length >= 2, 'each failure is logged with the missing key id');
          const lists = Number((await db.pool.query('SELECT count(*) AS n FROM lists WHERE team_id = $1', [own.teamId])).rows[0].n);
          assert.equal(lists, 1, 'the replay did not run the request again');
        } finally {
          await wrong.close();
        }
        const again = await right.request('POST', '/api/v1/lists', { key: own.apiKey, body: { name: 'sealed' }, idempotencyKey: key });
        assert.deepEqual([again.status, again.text], [201, first.text]);
      } finally {
        await right.close();
      }
    } finally {
      await db.drop();
    }
  });

  test('without SECRETS_ENCRYPTION_KEY the API does not start, naming it', async () => {
    await assert.rejects(startOn(pool, { SECRETS_ENCRYPTION_KEY: '' }), (err: unknown) => err instanceof ConfigError && err.variable === 'SECRETS_ENCRYPTION_KEY');
  });
});
