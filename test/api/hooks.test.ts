// POST /api/v1/hooks/{token} over the real app and Postgres, with a Temporal test server
// and no worker: these tests look at acceptance, authentication and idempotency; the runs
// themselves are covered by test/workflows/hookRunWorkflow.test.ts and test/e2e/hooks.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { secretBox } from '../../src/config/index.js';
import { signWebhookBody } from '../../src/domain/hookSignature.js';
import { createHook, revokeHookById, type CreatedHook } from '../../src/services/hooks.js';
import { HOOK_ID, TEAM_ID } from '../../src/temporal/searchAttributes.js';
import { hookRunWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const SECRET = 'whsec_api_test_secret';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let unsigned: CreatedHook;
let signed: CreatedHook;

before(async () => {
  env = await createTimeSkippingEnv();
  // Behind a trusted proxy so each request can come from its own client address: only the
  // rate-limit test below meets the per-IP buckets.
  app = await startTestApi({ temporal: env.client, config: { TRUST_PROXY: 'true' } });
  team = await createTestTeam(app.pool);
  unsigned = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'none' } });
  signed = await createHook(app.pool, { teamId: team.teamId, secret: SECRET, automation: { kind: 'none' } }, secretBox(app.config));
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

let ipSeq = 0;
const freshIp = () => `10.8.${Math.floor(++ipSeq / 250)}.${(ipSeq % 250) + 1}`;

const post = (hook: Pick<CreatedHook, 'path'>, opts: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {}) =>
  app.request('POST', hook.path, { ...opts, headers: { 'X-Forwarded-For': freshIp(), ...opts.headers } });

const deliveryRows = async (hookId: string, deliveryId: string) =>
  (await app.pool.query('SELECT run_id FROM hook_deliveries WHERE hook_id = $1 AND delivery_id = $2', [hookId, deliveryId])).rows;

describe('hook token', () => {
  test('an accepted request answers 202 with a run_id and starts workflow hook-run-<run_id> tagged with HookId and TeamId', async () => {
    const res = await post(unsigned, { body: { phone_number: '+14155550123' } });
    assert.equal(res.status, 202);
    assert.equal(res.json.success, true);
    assert.match(res.json.run_id, UUID_RE);
    assert.deepEqual(Object.keys(res.json).sort(), ['run_id', 'success']);
    const description = await env.client.workflow.getHandle(hookRunWorkflowId(res.json.run_id)).describe();
    assert.equal(description.type, 'hookRunWorkflow');
    assert.equal(description.typedSearchAttributes.get(HOOK_ID), unsigned.id);
    assert.equal(description.typedSearchAttributes.get(TEAM_ID), team.teamId);
  });

  test('any JSON body is accepted, including arrays, strings and an empty body', async () => {
    for (const rawBody of ['[1,2,3]', '"hello"', '42', 'null', '']) {
      const res = await post(unsigned, { rawBody });
      assert.equal(res.status, 202, `body ${JSON.stringify(rawBody)}`);
    }
  });

  test('an unknown token answers 404', async () => {
    const res = await post({ path: '/api/v1/hooks/wh_not_a_real_token' }, { body: {} });
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { success: false, message: 'Webhook not found' });
  });

  test('a token differing from a real one in its last character answers 404', async () => {
    const last = unsigned.path.at(-1) === 'A' ? 'B' : 'A';
    const res = await post({ path: `${unsigned.path.slice(0, -1)}${last}` }, { body: {} });
    assert.equal(res.status, 404);
  });

  test('revocation is immediate: the next request on the hook answers 404', async () => {
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'none' } });
    assert.equal((await post(hook, { body: {} })).status, 202);
    await revokeHookById(app.pool, hook.id);
    const res = await post(hook, { body: {} });
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { success: false, message: 'Webhook not found' });
  });

  test('a body just under 1 MiB is accepted and carried into the run', async () => {
    const rawBody = JSON.stringify({ phone: '+14155550123', filler: 'a'.repeat(1_048_576 - 60) });
    assert.ok(Buffer.byteLength(rawBody) <= 1_048_576);
    const res = await post(unsigned, { rawBody });
    assert.equal(res.status, 202);
    const history = await env.client.workflow.getHandle(hookRunWorkflowId(res.json.run_id)).fetchHistory();
    const input = JSON.parse(Buffer.from(history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0].data!).toString('utf8'));
    assert.equal(input.body.filler.length, 1_048_576 - 60);
  });

  test('invalid JSON answers 400 and a body over 1 MiB answers 413, starting nothing', async () => {
    const invalid = await post(unsigned, { rawBody: '{"phone":' });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.message, 'Invalid JSON body');
    const large = await post(unsigned, { rawBody: `{"x":"${'a'.repeat(1_048_576)}"}` });
    assert.equal(large.status, 413);
    assert.equal(large.json.maxBytes, 1_048_576);
  });
});

describe('signature', () => {
  const body = '{"phone_number":"+14155550123","first_name":"Ada"}';

  test('sha256=<hex> of the raw body answers 202', async () => {
    const res = await post(signed, { rawBody: body, headers: { 'X-Webhook-Signature': `sha256=${signWebhookBody(SECRET, body)}` } });
    assert.equal(res.status, 202);
  });

  test('the bare hex digest answers 202', async () => {
    const res = await post(signed, { rawBody: body, headers: { 'X-Webhook-Signature': signWebhookBody(SECRET, body) } });
    assert.equal(res.status, 202);
  });

  test('a missing signature answers 401 Invalid webhook signature', async () => {
    const res = await post(signed, { rawBody: body });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { success: false, message: 'Invalid webhook signature' });
  });

  test('a wrong signature answers 401 Invalid webhook signature', async () => {
    for (const header of [`sha256=${signWebhookBody('another secret', body)}`, `sha256=${'0'.repeat(64)}`, 'sha256=', 'garbage']) {
      const res = await post(signed, { rawBody: body, headers: { 'X-Webhook-Signature': header } });
      assert.equal(res.status, 401, header);
      assert.equal(res.json.message, 'Invalid webhook signature');
    }
  });

  test('the signature is checked over the exact bytes: unusual whitespace and unicode verify, a re-serialised body does not', async () => {
    const raw = Buffer.from('\n  {\t"phone_number" :"+1 415 555 0123",\r\n "first_name":"Zoë 👋", "note":"\\u00e9\u00e9" }  \n', 'utf8');
    const signature = `sha256=${signWebhookBody(SECRET, raw)}`;
    const res = await post(signed, { rawBody: raw, headers: { 'X-Webhook-Signature': signature } });
    assert.equal(res.status, 202);
    const reserialised = JSON.stringify(JSON.parse(raw.toString('utf8')));
    const again = await post(signed, { rawBody: reserialised, headers: { 'X-Webhook-Signature': signature } });
    assert.equal(again.status, 401);
  });

  test('a signature sent to an unsigned hook is ignored', async () => {
    const res = await post(unsigned, { rawBody: body, headers: { 'X-Webhook-Signature': 'sha256=whatever' } });
    assert.equal(res.status, 202);
  });

  test('an unknown token answers 404 before any signature check', async () => {
    const res = await post({ path: '/api/v1/hooks/wh_unknown' }, { rawBody: body });
    assert.equal(res.status, 404);
  });
});

describe('X-Webhook-Id', () => {
  test('the same id on the same hook answers the same run_id and starts nothing new', async () => {
    const headers = { 'X-Webhook-Id': 'evt_same_1' };
    const first = await post(unsigned, { body: { n: 1 }, headers });
    const second = await post(unsigned, { body: { n: 2 }, headers });
    assert.equal(first.status, 202);
    assert.equal(second.status, 202);
    assert.equal(second.json.run_id, first.json.run_id);
    const handle = env.client.workflow.getHandle(hookRunWorkflowId(first.json.run_id));
    // The workflow kept the first delivery's body: the second started nothing.
    const history = await handle.fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    const input = JSON.parse(Buffer.from(started!.input!.payloads![0].data!).toString('utf8'));
    assert.deepEqual(input.body, { n: 1 });
    assert.equal(input.deliveryId, 'evt_same_1');
  });

  test('20 concurrent duplicates answer one run_id, with one delivery row and one workflow', async () => {
    const headers = { 'X-Webhook-Id': `evt_concurrent_${Date.now()}` };
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(unsigned, { body: { i }, headers })));
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([202]));
    const runIds = new Set(responses.map((r) => r.json.run_id));
    assert.equal(runIds.size, 1);
    const [runId] = runIds;
    assert.deepEqual(await deliveryRows(unsigned.id, headers['X-Webhook-Id']), [{ run_id: runId }]);
    const history = await env.client.workflow.getHandle(hookRunWorkflowId(runId)).fetchHistory();
    assert.equal(history.events?.filter((e) => e.workflowExecutionStartedEventAttributes).length, 1);
  });

  test('the first delivery records that its run started', async () => {
    const res = await post(unsigned, { body: {}, headers: { 'X-Webhook-Id': 'evt_started' } });
    const row = (await app.pool.query('SELECT run_id, started_at FROM hook_deliveries WHERE hook_id = $1 AND delivery_id = $2', [unsigned.id, 'evt_started'])).rows[0];
    assert.equal(row.run_id, res.json.run_id);
    assert.ok(row.started_at instanceof Date);
  });

  test('a duplicate of a started delivery answers its run_id and starts nothing, even when Temporal no longer knows the run', async () => {
    const forgotten = randomUUID();
    await app.pool.query("INSERT INTO hook_deliveries (hook_id, delivery_id, run_id, started_at) VALUES ($1, 'evt_forgotten', $2, now())", [unsigned.id, forgotten]);
    const res = await post(unsigned, { body: {}, headers: { 'X-Webhook-Id': 'evt_forgotten' } });
    assert.equal(res.status, 202);
    assert.equal(res.json.run_id, forgotten);
    await assert.rejects(env.client.workflow.getHandle(hookRunWorkflowId(forgotten)).describe(), WorkflowNotFoundError);
  });

  test('a duplicate of a delivery whose first request died before starting the run starts it', async () => {
    const orphan = randomUUID();
    await app.pool.query("INSERT INTO hook_deliveries (hook_id, delivery_id, run_id) VALUES ($1, 'evt_orphan', $2)", [unsigned.id, orphan]);
    const res = await post(unsigned, { body: { retried: true }, headers: { 'X-Webhook-Id': 'evt_orphan' } });
    assert.equal(res.json.run_id, orphan);
    const description = await env.client.workflow.getHandle(hookRunWorkflowId(orphan)).describe();
    assert.equal(description.typedSearchAttributes.get(HOOK_ID), unsigned.id);
    assert.ok((await deliveryRows(unsigned.id, 'evt_orphan')).length === 1);
  });

  test('the same id on another hook is another delivery', async () => {
    const headers = { 'X-Webhook-Id': 'evt_two_hooks' };
    const a = await post(unsigned, { body: {}, headers });
    const other = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'none' } });
    const b = await post(other, { body: {}, headers });
    assert.notEqual(a.json.run_id, b.json.run_id);
  });

  test('requests without the header are each a new run', async () => {
    const a = await post(unsigned, { body: {} });
    const b = await post(unsigned, { body: {} });
    assert.notEqual(a.json.run_id, b.json.run_id);
  });

  test('after 24 hours the same id runs again with a new run_id', async () => {
    const headers = { 'X-Webhook-Id': 'evt_expiring' };
    const first = await post(unsigned, { body: {}, headers });
    await app.pool.query("UPDATE hook_deliveries SET received_at = now() - interval '24 hours 1 second' WHERE hook_id = $1 AND delivery_id = $2", [
      unsigned.id,
      headers['X-Webhook-Id'],
    ]);
    const second = await post(unsigned, { body: {}, headers });
    assert.equal(second.status, 202);
    assert.notEqual(second.json.run_id, first.json.run_id);
    assert.deepEqual(await deliveryRows(unsigned.id, headers['X-Webhook-Id']), [{ run_id: second.json.run_id }]);
  });

  test('expired deliveries are purged by later deliveries', async () => {
    await post(unsigned, { body: {}, headers: { 'X-Webhook-Id': 'evt_old' } });
    await app.pool.query("UPDATE hook_deliveries SET received_at = now() - interval '25 hours' WHERE hook_id = $1 AND delivery_id = 'evt_old'", [unsigned.id]);
    await post(unsigned, { body: {}, headers: { 'X-Webhook-Id': 'evt_new' } });
    assert.deepEqual(await deliveryRows(unsigned.id, 'evt_old'), []);
  });

  test('a malformed X-Webhook-Id answers 400 and records nothing', async () => {
    const res = await post(unsigned, { body: {}, headers: { 'X-Webhook-Id': 'x'.repeat(256) } });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { success: false, message: 'X-Webhook-Id must be 1 to 255 printable ASCII characters' });
  });

  test('a duplicate with a wrong signature still answers 401', async () => {
    const body = '{}';
    const headers = { 'X-Webhook-Id': 'evt_signed', 'X-Webhook-Signature': signWebhookBody(SECRET, body) };
    assert.equal((await post(signed, { rawBody: body, headers })).status, 202);
    const res = await post(signed, { rawBody: body, headers: { ...headers, 'X-Webhook-Signature': signWebhookBody('wrong', body) } });
    assert.equal(res.status, 401);
  });
});

describe('rate limit', () => {
  test('60 requests a minute from one address are accepted, the 61st answers 429 and starts nothing; other addresses are unaffected', async () => {
    const ip = '10.9.0.1';
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'none' } });
    for (let i = 0; i < 60; i++) {
      const res = await post(hook, { body: { i }, headers: { 'X-Forwarded-For': ip } });
      assert.equal(res.status, 202, `request ${i + 1}: ${res.status} ${res.text}`);
    }
    const rejected = await post(hook, { body: {}, headers: { 'X-Forwarded-For': ip, 'X-Webhook-Id': 'evt_rate_limited' } });
    assert.equal(rejected.status, 429);
    assert.deepEqual(rejected.json, { success: false, message: 'Rate limit exceeded' });
    assert.ok(Number(rejected.headers.get('retry-after')) >= 1);
    assert.equal(rejected.headers.get('x-ratelimit-limit'), '60');
    assert.equal(rejected.headers.get('x-ratelimit-remaining'), '0');
    assert.deepEqual(await deliveryRows(hook.id, 'evt_rate_limited'), []);
    // Unknown tokens from that address are limited too: the bucket is checked before the token.
    assert.equal((await post({ path: '/api/v1/hooks/wh_unknown' }, { body: {}, headers: { 'X-Forwarded-For': ip } })).status, 429);
    assert.equal((await post(hook, { body: {}, headers: { 'X-Forwarded-For': '10.9.0.2' } })).status, 202);
  });
});
