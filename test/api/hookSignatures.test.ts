// POST /api/v1/hooks/{token} on hooks signed with Standard Webhooks (timestamped: replays
// refused) next to hooks signed the default way (X-Webhook-Signature), over the real app,
// Postgres and a Temporal test server without a worker.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { secretBox } from '../../src/config/index.js';
import { signWebhookBody } from '../../src/domain/hookSignature.js';
import { generateWebhookSecret, signWebhookMessage } from '../../src/domain/webhookSignatures.js';
import { createHook, type CreatedHook } from '../../src/services/hooks.js';
import { hookRunWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const LEGACY_SECRET = 'legacy-hook-secret-0123456789';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let legacy: CreatedHook;
let standard: CreatedHook;
let standardSecret: string;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, config: { RATE_LIMITS_ENABLED: 'false' } });
  team = await createTestTeam(app.pool);
  const box = secretBox(app.config);
  legacy = await createHook(app.pool, { teamId: team.teamId, secret: LEGACY_SECRET, automation: { kind: 'none' } }, box);
  standardSecret = generateWebhookSecret();
  standard = await createHook(app.pool, { teamId: team.teamId, secret: standardSecret, signatureScheme: 'standard-webhooks', automation: { kind: 'none' } }, box);
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The three Standard Webhooks headers for `body`, signed now unless told otherwise. */
function standardHeaders(body: string, opts: { id?: string; timestamp?: number; secret?: string } = {}): Record<string, string> {
  const id = opts.id ?? `msg_${randomUUID()}`;
  const timestamp = opts.timestamp ?? nowSeconds();
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signWebhookMessage(opts.secret ?? standardSecret, id, timestamp, body) };
}

const post = (hook: CreatedHook, rawBody: string, headers: Record<string, string>) => app.request('POST', hook.path, { rawBody, headers });

const claims = async (hookId: string) => Number((await app.pool.query('SELECT count(*) FROM hook_deliveries WHERE hook_id = $1', [hookId])).rows[0].count);

describe('a hook signed with Standard Webhooks', () => {
  test('a request signed now is accepted: 202 and the run’s workflow is started', async () => {
    const body = JSON.stringify({ phone_number: '+14155550123' });
    const res = await post(standard, body, standardHeaders(body));
    assert.equal(res.status, 202, res.text);
    assert.match(res.json.run_id, UUID_RE);
    const description = await env.client.workflow.getHandle(hookRunWorkflowId(res.json.run_id)).describe();
    assert.equal(description.type, 'hookRunWorkflow');
  });

  test('the same signed message sent again within the window answers the first run_id and starts nothing (webhook-id is the delivery id)', async () => {
    const body = '{"phone_number":"+14155550124"}';
    const headers = standardHeaders(body);
    const first = await post(standard, body, headers);
    const again = await post(standard, body, headers);
    assert.equal(first.status, 202);
    assert.equal(again.status, 202);
    assert.equal(again.json.run_id, first.json.run_id);
    const rows = await app.pool.query('SELECT run_id FROM hook_deliveries WHERE hook_id = $1 AND delivery_id = $2', [standard.id, headers['webhook-id']]);
    assert.deepEqual(rows.rows, [{ run_id: first.json.run_id }]);
  });

  test('a captured request replayed more than 5 minutes after it was signed answers 401 and claims nothing', async () => {
    const before = await claims(standard.id);
    const body = '{"phone_number":"+14155550125"}';
    const res = await post(standard, body, standardHeaders(body, { timestamp: nowSeconds() - 301 - 5 }));
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { success: false, message: 'webhook-timestamp is more than 300 seconds old: the request is stale or replayed' });
    assert.equal(await claims(standard.id), before);
  });

  test('a timestamp more than 5 minutes in the future answers 401', async () => {
    const body = '{}';
    const res = await post(standard, body, standardHeaders(body, { timestamp: nowSeconds() + 301 + 5 }));
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { success: false, message: "webhook-timestamp is more than 300 seconds in the future: check the sender's clock" });
  });

  test('a wrong signature answers 401 Invalid webhook signature: another secret, another body, a re-dated timestamp, another id', async () => {
    const body = '{"a":1}';
    const signed = standardHeaders(body);
    const cases: Array<[string, string, Record<string, string>]> = [
      ['another secret', body, standardHeaders(body, { secret: generateWebhookSecret() })],
      ['another body', '{"a":2}', signed],
      ['a re-dated timestamp', body, { ...signed, 'webhook-timestamp': String(Number(signed['webhook-timestamp']) - 1) }],
      ['another id', body, { ...signed, 'webhook-id': `${signed['webhook-id']}x` }],
      ['no v1 signature', body, { ...signed, 'webhook-signature': signed['webhook-signature'].replace(/^v1,/, 'v2,') }],
    ];
    for (const [name, sent, headers] of cases) {
      const res = await post(standard, sent, headers);
      assert.equal(res.status, 401, name);
      assert.deepEqual(res.json, { success: false, message: 'Invalid webhook signature' }, name);
    }
  });

  test('missing headers answer 401 naming them; a correct X-Webhook-Signature does not stand in for them', async () => {
    const body = '{}';
    const signed = standardHeaders(body);
    for (const missing of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const headers = { ...signed };
      delete headers[missing];
      const res = await post(standard, body, headers);
      assert.equal(res.status, 401, missing);
      assert.deepEqual(res.json, { success: false, message: 'Missing Standard Webhooks headers: webhook-id, webhook-timestamp and webhook-signature are required' });
    }
    const legacyStyle = await post(standard, body, { 'X-Webhook-Signature': `sha256=${signWebhookBody(standardSecret, body)}` });
    assert.equal(legacyStyle.status, 401);
  });

  test('a timestamp that is not Unix seconds answers 401 naming the header', async () => {
    const body = '{}';
    for (const timestamp of ['soon', `${nowSeconds()}.5`, new Date().toISOString()]) {
      const res = await post(standard, body, { ...standardHeaders(body), 'webhook-timestamp': timestamp });
      assert.equal(res.status, 401, timestamp);
      assert.deepEqual(res.json, { success: false, message: 'webhook-timestamp must be the signing time in Unix seconds' });
    }
  });

  test('a correctly signed webhook-id containing "." answers 400 and claims nothing', async () => {
    const before = await claims(standard.id);
    const body = '{}';
    const res = await post(standard, body, standardHeaders(body, { id: 'msg.1' }));
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { success: false, message: 'webhook-id must be 1 to 255 printable ASCII characters other than "."' });
    assert.equal(await claims(standard.id), before);
  });

  test('X-Webhook-Id is ignored: a new webhook-id is a new run even with a repeated X-Webhook-Id', async () => {
    const body = '{}';
    const first = await post(standard, body, { ...standardHeaders(body), 'X-Webhook-Id': 'evt_same' });
    const second = await post(standard, body, { ...standardHeaders(body), 'X-Webhook-Id': 'evt_same' });
    assert.equal(first.status, 202);
    assert.equal(second.status, 202);
    assert.notEqual(second.json.run_id, first.json.run_id);
  });
});

describe('a hook signed the default way (X-Webhook-Signature) is unchanged', () => {
  test('X-Webhook-Signature of the body is accepted; Standard Webhooks headers alone are not; X-Webhook-Id still deduplicates', async () => {
    const body = '{"phone_number":"+14155550126"}';
    const signature = `sha256=${signWebhookBody(LEGACY_SECRET, body)}`;
    const ok = await post(legacy, body, { 'X-Webhook-Signature': signature, 'X-Webhook-Id': 'evt_legacy_1' });
    assert.equal(ok.status, 202);
    const again = await post(legacy, body, { 'X-Webhook-Signature': signature, 'X-Webhook-Id': 'evt_legacy_1' });
    assert.equal(again.json.run_id, ok.json.run_id);
    // No timestamp is involved: the same signature works whenever it is sent.
    const standardOnly = await post(legacy, body, standardHeaders(body, { secret: generateWebhookSecret() }));
    assert.equal(standardOnly.status, 401);
    assert.deepEqual(standardOnly.json, { success: false, message: 'Invalid webhook signature' });
  });
});

test('the tolerance is HOOK_SIGNATURE_TOLERANCE_SECONDS', async () => {
  const strict = await startTestApi({ temporal: env.client, config: { RATE_LIMITS_ENABLED: 'false', HOOK_SIGNATURE_TOLERANCE_SECONDS: '60' } });
  try {
    const body = '{}';
    const res = await strict.request('POST', standard.path, { rawBody: body, headers: standardHeaders(body, { timestamp: nowSeconds() - 120 }) });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { success: false, message: 'webhook-timestamp is more than 60 seconds old: the request is stale or replayed' });
    const fresh = await strict.request('POST', standard.path, { rawBody: body, headers: standardHeaders(body, { timestamp: nowSeconds() - 30 }) });
    assert.equal(fresh.status, 202);
  } finally {
    await strict.close();
  }
});
