import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import http from 'node:http';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createApp } from '../../src/api/app.js';
import { KeyUsageRecorder } from '../../src/api/middleware/keyUsage.js';
import { defineRoute } from '../../src/api/route.js';
import { allRoutes } from '../../src/api/routes.js';
import { z } from '../../src/api/schemas.js';
import { createPool } from '../../src/db/pool.js';
import { createLogger } from '../../src/logging/logger.js';
import { createTestTeam, startTestApi, testConfig, type TestApi, type TestTeam } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

// A route that echoes what it was given, to exercise the shared chain.
const echoRoute = defineRoute({
  method: 'post',
  path: '/api/v1/test-echo',
  operationId: 'testEcho',
  summary: 'test only',
  tags: ['Test'],
  auth: 'apiKey',
  request: { body: z.object({ name: z.string(), count: z.number().int().optional() }) },
  responses: { 200: { description: 'echo' } },
  handler: async ({ body, auth }) => ({ body: { success: true, team_id: auth.teamId, body } }),
});

let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, routes: [...allRoutes(), echoRoute] });
  team = await createTestTeam(app.pool);
});

after(async () => {
  await app?.close();
  await env?.teardown();
});

describe('request bodies', () => {
  test('a declared body over 1,048,576 bytes answers 413 with maxBytes', async () => {
    const res = await app.request('POST', '/api/v1/test-echo', { key: team.apiKey, rawBody: `{"name":"${'x'.repeat(1_048_600)}"}` });
    assert.equal(res.status, 413);
    assert.deepEqual(res.json, { success: false, message: 'Request body exceeds the limit of 1048576 bytes', maxBytes: 1048576 });
  });

  test('a chunked body that grows past the limit answers 413 too', async () => {
    const url = new URL(app.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, path: '/api/v1/test-echo', method: 'POST', headers: { Authorization: `Bearer ${team.apiKey}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write('x'.repeat(64 * 1024));
      req.end();
    });
    assert.equal(status, 413);
  });

  test('a body of exactly the limit is read and validated, not rejected for size', async () => {
    const padding = 1_048_576 - '{"name":""}'.length;
    const res = await app.request('POST', '/api/v1/test-echo', { key: team.apiKey, rawBody: `{"name":"${'y'.repeat(padding)}"}` });
    assert.equal(res.status, 200);
    assert.equal(res.json.body.name.length, padding);
  });

  test('invalid JSON answers 400 Invalid JSON body', async () => {
    const res = await app.request('POST', '/api/v1/test-echo', { key: team.apiKey, rawBody: '{"name": "a",' });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { success: false, message: 'Invalid JSON body' });
  });

  test('a validation failure answers 400 naming each field', async () => {
    const res = await app.request('POST', '/api/v1/test-echo', { key: team.apiKey, body: { count: 1.5 } });
    assert.equal(res.status, 400);
    assert.equal(res.json.success, false);
    assert.match(res.json.message, /name is required/);
    assert.match(res.json.message, /count/);
  });
});

describe('routing and errors', () => {
  test('an unknown route answers 404 with the JSON error body', async () => {
    const res = await app.request('GET', '/api/v1/no-such-thing', { key: team.apiKey });
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { success: false, message: 'Not found' });
  });

  /** Any method, TRACE included (fetch refuses to send it): status, Allow and the JSON body. */
  function send(method: string, path: string): Promise<{ status: number; allow: string | undefined; json: unknown }> {
    const url = new URL(app.url);
    return new Promise((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, path, method }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, json: text ? JSON.parse(text) : undefined }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  test('a known path with a method it does not have answers 405 with Allow, before authentication', async () => {
    for (const [method, path, allow] of [
      ['TRACE', '/api/v1/lists', 'HEAD, GET, POST'],
      ['PUT', '/api/v1/lists/8c2b6c9e-1f0a-4d7e-9b1a-2f3c4d5e6f70', 'HEAD, GET, PATCH, DELETE'],
      ['GET', '/api/v1/create-contact', 'POST'],
      ['OPTIONS', '/api/v1/get-call-status/abc', 'HEAD, GET'],
    ] as const) {
      const res = await send(method, path);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.deepEqual(res.json, { success: false, message: 'Method not allowed' }, `${method} ${path}`);
      assert.deepEqual(new Set(res.allow?.split(', ')), new Set(allow.split(', ')), `${method} ${path}`);
    }
  });

  test('an unknown path keeps 404 Not found whatever the method', async () => {
    for (const method of ['TRACE', 'PUT', 'GET']) {
      const res = await send(method, '/api/v1/lists-of-nothing');
      assert.equal(res.status, 404, method);
      assert.deepEqual(res.json, { success: false, message: 'Not found' });
    }
  });

  test('an unexpected error answers 500 Internal server error without its detail', async () => {
    const boom = defineRoute({
      method: 'get',
      path: '/api/v1/test-boom',
      operationId: 'testBoom',
      summary: 'test only',
      tags: ['Test'],
      auth: 'public',
      responses: {},
      handler: async () => {
        throw new Error('secret detail');
      },
    });
    const local = await startTestApi({ temporal: env.client, routes: [boom] });
    try {
      const res = await local.request('GET', '/api/v1/test-boom');
      assert.equal(res.status, 500);
      assert.deepEqual(res.json, { success: false, message: 'Internal server error' });
      assert.ok(res.headers.get('x-request-id'), 'a request id to find the log line');
    } finally {
      await local.close();
    }
  });
});

describe('health', () => {
  test('health answers 200 ok with every check when the dependencies are up', async () => {
    const res = await app.request('GET', '/api/v1/health');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { success: true, status: 'ok', checks: { database: 'ok', temporal: 'ok', redis: 'disabled' } });
  });

  test('health answers 503 naming the database when it is unreachable', async () => {
    const config = testConfig();
    const deadPool = createPool('postgres://postgres:postgres@127.0.0.1:1/none', 1);
    const logger = createLogger('silent');
    const koa = createApp({ config, pool: deadPool, temporal: env.client, logger, keyUsage: new KeyUsageRecorder(deadPool, logger, 60_000) });
    const server = http.createServer(koa.callback()).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const { port } = server.address() as { port: number };
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
      assert.equal(res.status, 503);
      const body = await res.json();
      assert.equal(body.success, false);
      assert.equal(body.checks.database, 'down');
      assert.equal(body.checks.temporal, 'ok');
    } finally {
      server.close();
      await deadPool.end();
    }
  });
});

describe('OpenAPI', () => {
  test('the document is OpenAPI 3.1, version 1.0.0, and describes the routes with their schemas', async () => {
    const res = await app.request('GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.json.openapi, /^3\.1\./);
    assert.equal(res.json.info.version, '1.0.0');
    assert.ok(res.json.paths['/api/v1/health'].get, 'health is described');
    assert.ok(res.json.components.schemas.Error, 'the shared error schema is a component');
  });
});
