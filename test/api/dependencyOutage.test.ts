// Requests that find a dependency down answer 503 { success: false, message } with
// Retry-After, naming the part, never 500 (docs/reliability.md). The outages are real: a
// Postgres pool and a Temporal client aimed at a port where nothing listens.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import { Client, Connection, NamespaceNotFoundError } from '@temporalio/client';
import { allRoutes } from '../../src/api/routes.js';
import { toApiError } from '../../src/api/middleware/errorHandler.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { freePort } from '../../src/localPorts.js';
import { createLogger } from '../../src/logging/logger.js';
import { startApi, type RunningApi } from '../../src/server.js';
import { createTestTeam, testConfig, testPool } from '../support/app.js';

let downPool: Pool;
let downTemporal: Client;
let api: RunningApi;
let base: string;
let apiKey: string;

before(async () => {
  // A real team in the real test database, so the key is well formed and would authenticate.
  apiKey = (await createTestTeam(await testPool())).apiKey;
  const deadPort = await freePort();
  downPool = createPool(`postgres://postgres:postgres@127.0.0.1:${deadPort}/none`, 2);
  // No gRPC retry interceptor: a retry's backoff timer firing after close() threw "Channel has
  // been shut down" out of the finished test (the refused call maps to 503 either way).
  downTemporal = new Client({ connection: Connection.lazy({ address: `127.0.0.1:${deadPort}`, connectTimeout: '1s', interceptors: [] }) });
  api = await startApi({ config: testConfig({ RATE_LIMITS_ENABLED: 'false' }), pool: downPool, temporal: downTemporal, logger: createLogger('silent'), port: 0, routes: allRoutes() });
  base = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
});

after(async () => {
  await api?.close();
  await downPool?.end();
  await downTemporal?.connection.close().catch(() => {});
});

test('a well-formed request while Postgres is down answers 503 naming the database, with Retry-After', async () => {
  const res = await fetch(`${base}/api/v1/calls?limit=5`, { headers: { Authorization: `Bearer ${apiKey}` } });
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('retry-after'), '5');
  const body = (await res.json()) as { success: boolean; message: string };
  assert.equal(body.success, false);
  assert.match(body.message, /^Service unavailable: the database cannot be reached/);
});

test('a create while Postgres is down answers 503 too, and health says degraded naming database and temporal', async () => {
  const create = await fetch(`${base}/api/v1/create-phone-call`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ from_number: '+12125550100', script_id: '00000000-0000-4000-8000-000000000000', contact: { phone_number: '+16285550100', first_name: 'A', last_name: 'B' } }),
  });
  assert.equal(create.status, 503);
  assert.ok(Number(create.headers.get('retry-after')) >= 1);
  const health = await fetch(`${base}/api/v1/health`);
  assert.equal(health.status, 503);
  const body = (await health.json()) as { status: string; checks: Record<string, string> };
  assert.equal(body.status, 'degraded');
  assert.equal(body.checks.database, 'down');
  assert.equal(body.checks.temporal, 'down');
});

test('the error of a Temporal call that cannot connect maps to 503 naming Temporal', async () => {
  // The client retries an unavailable server; the deadline ends the wait as a request's would.
  const err = await downTemporal.connection.withDeadline(Date.now() + 2000, () => downTemporal.workflowService.getSystemInfo({})).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err, 'the unreachable Temporal answered');
  const apiError = toApiError(err);
  assert.equal(apiError.status, 503);
  assert.match(apiError.message, /the workflow engine \(Temporal\) cannot be reached/);
  assert.equal(apiError.headers['Retry-After'], '5');
});

test("a Temporal that answers 'Namespace not found' for the namespace the service runs in maps to 503 naming Temporal", () => {
  // What the dev server answered, for minutes, while its store timed out (docs/reliability.md):
  // the client cannot start a workflow, and a retry later can.
  const apiError = toApiError(new NamespaceNotFoundError('default'));
  assert.equal(apiError.status, 503);
  assert.match(apiError.message, /the workflow engine \(Temporal\) cannot be reached/);
  assert.equal(apiError.headers['Retry-After'], '5');
});

test('an unknown error still maps to 500', () => {
  assert.equal(toApiError(new Error('boom')).status, 500);
});
