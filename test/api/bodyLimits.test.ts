// Limits on what a request may carry, over the real app, Postgres and a Temporal test
// server: JSON nesting depth (every JSON endpoint), a webhook body that grows when
// re-encoded for Temporal, and long or oversized headers. None of them may answer 500.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { INVALID_KEY_MESSAGE } from '../../src/api/middleware/idempotency.js';
import { NESTED_TOO_DEEP_MESSAGE } from '../../src/api/middleware/jsonBody.js';
import { allRoutes } from '../../src/api/routes.js';
import { MAX_JSON_DEPTH } from '../../src/domain/jsonNesting.js';
import { secretBox } from '../../src/config/index.js';
import { createHook, type CreatedHook } from '../../src/services/hooks.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const MEDIA_EDGE_SECRET = 'body-limits-media-edge-secret-0123456789';
const HOOK_SECRET = 'whsec_body_limits';

let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let hook: CreatedHook;
let signedHook: CreatedHook;

before(async () => {
  env = await createTimeSkippingEnv();
  // Rate limits off: this file sends many requests from one address, and limits are not its subject.
  app = await startTestApi({ temporal: env.client, config: { MEDIA_EDGE_SECRET, RATE_LIMITS_ENABLED: 'false' } });
  team = await createTestTeam(app.pool);
  hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'none' } });
  signedHook = await createHook(app.pool, { teamId: team.teamId, secret: HOOK_SECRET, automation: { kind: 'none' } }, secretBox(app.config));
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

/** `{"a":{"a":…1…}}` with `levels` objects inside each other. */
const nestedObjects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
/** `[[…]]` with `levels` arrays. */
const nestedArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

describe('JSON nesting depth', () => {
  const writes = allRoutes().filter((r) => r.method !== 'get');

  test('the check covers the JSON endpoints: the hook endpoint, upsert-object and the internal API among them', () => {
    const paths = writes.map((r) => r.path);
    for (const path of ['/api/v1/hooks/{token}', '/api/v1/upsert-object', '/api/v1/create-phone-call', '/internal/v1/calls/{call_id}/events']) {
      assert.ok(paths.includes(path), `${path} is a JSON endpoint: ${paths.join(', ')}`);
    }
  });

  for (const route of writes) {
    test(`${route.method.toUpperCase()} ${route.path}: a body nested 5,000 levels deep answers 400 naming the limit`, async () => {
      const path = route.auth === 'hookToken' ? hook.path : route.path.replace(/\{\w+\}/g, () => randomUUID());
      const headers: Record<string, string> = {};
      if (route.auth === 'apiKey') headers.Authorization = `Bearer ${team.apiKey}`;
      if (route.auth === 'mediaEdge') headers.Authorization = `Bearer ${MEDIA_EDGE_SECRET}`;
      for (const rawBody of [nestedObjects(5_000), nestedArrays(5_000)]) {
        const res = await app.request(route.method.toUpperCase(), path, { rawBody, headers });
        assert.equal(res.status, 400, `${res.status} ${res.text}`);
        assert.deepEqual(res.json, { success: false, message: `Request body is nested deeper than ${MAX_JSON_DEPTH} levels` });
      }
    });
  }

  test('the message is the documented one', () => {
    assert.equal(NESTED_TOO_DEEP_MESSAGE, 'Request body is nested deeper than 64 levels');
  });

  test(`the hook endpoint accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}; brackets inside strings do not count`, async () => {
    // The body object itself is level 1.
    const accepted = await app.request('POST', hook.path, { rawBody: `{"deep":${nestedObjects(MAX_JSON_DEPTH - 1)}}` });
    assert.equal(accepted.status, 202, accepted.text);
    const refused = await app.request('POST', hook.path, { rawBody: `{"deep":${nestedObjects(MAX_JSON_DEPTH)}}` });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.message, NESTED_TOO_DEEP_MESSAGE);
    const inStrings = await app.request('POST', hook.path, { body: { text: '['.repeat(5_000), escaped: `\\"${'{'.repeat(5_000)}` } });
    assert.equal(inStrings.status, 202, inStrings.text);
  });

  test(`upsert-object with validation_mode off stores data ${MAX_JSON_DEPTH - 2} levels deep and refuses deeper with 400, never 500`, async () => {
    const created = await app.request('POST', '/api/v1/object-types', { key: team.apiKey, body: { type_name: 'deep_doc', validation_mode: 'off' } });
    assert.equal(created.status, 201, created.text);
    // body → data → the nested document.
    const deepest = JSON.parse(nestedObjects(MAX_JSON_DEPTH - 2));
    const stored = await app.request('POST', '/api/v1/upsert-object', { key: team.apiKey, body: { type_name: 'deep_doc', data: { id: 'd1', doc: deepest } } });
    assert.ok(stored.status === 200 || stored.status === 201, stored.text);
    const refused = await app.request('POST', '/api/v1/upsert-object', {
      key: team.apiKey,
      rawBody: `{"type_name":"deep_doc","data":{"id":"d2","doc":${nestedObjects(5_000)}}}`,
    });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.message, NESTED_TOO_DEEP_MESSAGE);
  });
});

describe('webhook bodies that reach a Temporal payload', () => {
  test('a body under 1,048,576 bytes that re-encodes larger (1e20 is 21 digits as JSON) answers 413, not 500', async () => {
    const rawBody = `[${Array.from({ length: 200_000 }, () => '1e20').join(',')}]`;
    assert.ok(rawBody.length < 1_048_576);
    const res = await app.request('POST', hook.path, { rawBody });
    assert.equal(res.status, 413, res.text);
    assert.deepEqual(res.json, { success: false, message: 'Request body exceeds the limit of 1048576 bytes', maxBytes: 1_048_576 });
  });

  test('invalid UTF-8 inside strings (each byte re-encoded as the 3-byte U+FFFD) answers 413 past the limit', async () => {
    const rawBody = Buffer.concat([Buffer.from('{"text":"'), Buffer.alloc(500_000, 0xff), Buffer.from('"}')]);
    const res = await app.request('POST', hook.path, { rawBody });
    assert.equal(res.status, 413, res.text);
  });

  test('a body just under the limit that re-encodes to its own size starts the run', async () => {
    const res = await app.request('POST', hook.path, { body: { text: 'x'.repeat(1_000_000) } });
    assert.equal(res.status, 202, res.text);
  });
});

describe('headers', () => {
  const long = 'k'.repeat(12_000);

  test('a 12,000-character API key answers 401 in either shape (with or without a prefix)', async () => {
    for (const key of [long, `${long}_${long.slice(0, 100)}`, `abc_${long}`]) {
      const res = await app.request('GET', '/api/v1/calls', { headers: { Authorization: `Bearer ${key}` } });
      assert.equal(res.status, 401, res.text);
      assert.equal(res.json.success, false);
    }
  });

  test('a 12,000-character media edge secret answers 401', async () => {
    const res = await app.request('POST', `/internal/v1/calls/${randomUUID()}/events`, { headers: { Authorization: `Bearer ${long}` }, body: { type: 'ringing' } });
    assert.equal(res.status, 401, res.text);
  });

  test('a 12,000-character Idempotency-Key answers 400 naming the rule', async () => {
    const res = await app.request('POST', '/api/v1/create-contact', {
      key: team.apiKey,
      headers: { 'Idempotency-Key': long },
      body: { first_name: 'Ada', phone_number: '+14155550123' },
    });
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(res.json, { success: false, message: INVALID_KEY_MESSAGE });
  });

  test('a 12,000-character X-Webhook-Id answers 400 and X-Webhook-Signature 401', async () => {
    const byId = await app.request('POST', hook.path, { headers: { 'X-Webhook-Id': long }, body: {} });
    assert.equal(byId.status, 400, byId.text);
    const bySignature = await app.request('POST', signedHook.path, { headers: { 'X-Webhook-Signature': `sha256=${long}` }, body: {} });
    assert.equal(bySignature.status, 401, bySignature.text);
  });

  test('a 12,000-character X-Request-Id is replaced by a generated one', async () => {
    const res = await app.request('GET', '/api/v1/health', { headers: { 'X-Request-Id': long } });
    assert.ok(res.status === 200 || res.status === 503, res.text);
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  test("headers over Node's 16 KiB limit answer 431 in the API's JSON shape, and the server keeps serving", async () => {
    const res = await app.request('GET', '/api/v1/calls', { key: team.apiKey, headers: { 'X-Padding': 'p'.repeat(20_000) } });
    assert.equal(res.status, 431);
    assert.deepEqual(res.json, { success: false, message: 'Request headers exceed the server limit' });
    const after = await app.request('GET', '/api/v1/calls', { key: team.apiKey });
    assert.equal(after.status, 200, after.text);
  });

  test('a malformed HTTP request answers 400 in the JSON shape', async () => {
    const url = new URL(app.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(answer, /\r\n\r\n\{"success":false,"message":"Malformed HTTP request"\}$/);
  });
});
