// The event webhook endpoints and deliveries API over the real Koa app and Postgres.
// Workflows are started on a time-skipping test server with no worker for their queues, so
// deliveries stay where the test puts them; sending is tested in test/webhooks and
// test/e2e/eventWebhooks.test.ts. WEBHOOK_ALLOW_PRIVATE_URLS is off here, and host names
// resolve through a table (anything else through the system resolver: localhost is real).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { secretBox } from '../../src/config/index.js';
import { webhookEndpointSecretContext } from '../../src/services/webhookEndpoints.js';
import { hookRunFailedEvent, recordWebhookEvents } from '../../src/services/webhookEvents.js';
import { WEBHOOK_ENDPOINT_ID, WEBHOOK_EVENT_TYPE, TEAM_ID } from '../../src/temporal/searchAttributes.js';
import { systemResolver, type HostResolver } from '../../src/webhooks/addresses.js';
import { webhookDeliveryWorkflowId, webhookTaskQueue } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { calleeNumber } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { eventually } from '../support/eventually.js';

const TASK_QUEUE = 'webhook-endpoints-api';
const PUBLIC_URL = 'https://hooks.example.test/events';

const DNS: Record<string, string[]> = {
  'hooks.example.test': ['93.184.216.34'],
  'other.example.test': ['2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example.test': ['127.0.0.1'],
  'mixed.example.test': ['93.184.216.34', '10.0.0.7'],
};
const resolveHost: HostResolver = async (host) => {
  const table = DNS[host];
  if (table) return table.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  if (host.endsWith('.test')) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return systemResolver(host);
};

let env: TestWorkflowEnvironment;
let api: TestApi;

before(async () => {
  env = await createTimeSkippingEnv();
  api = await startTestApi({ temporal: env.client, config: { TEMPORAL_TASK_QUEUE: TASK_QUEUE, WEBHOOK_ALLOW_PRIVATE_URLS: 'false' }, resolveHost });
});

after(async () => {
  await api?.close();
  await env?.teardown();
});

const request = (team: TestTeam, method: string, path: string, body?: unknown, headers?: Record<string, string>) => api.request(method, path, { key: team.apiKey, body, headers });

async function createEndpoint(team: TestTeam, body: Record<string, unknown> = { url: PUBLIC_URL }) {
  const res = await request(team, 'POST', '/api/v1/webhook-endpoints', body);
  assert.equal(res.status, 201, res.text);
  return res.json as { endpoint: { id: string; url: string; events: string[] | null }; secret: string };
}

const endpointCount = async (team: TestTeam) =>
  Number((await api.pool.query('SELECT count(*) AS n FROM webhook_endpoints WHERE team_id = $1', [team.teamId])).rows[0].n);

/** Polls until `check` is true (background work: a delivery's workflow start). */
describe('POST /api/v1/webhook-endpoints', () => {
  test('201 with the endpoint and its secret, whsec_ and at least 24 random bytes, shown this once', async () => {
    const team = await createTestTeam(api.pool);
    const res = await request(team, 'POST', '/api/v1/webhook-endpoints', { url: PUBLIC_URL, description: 'CRM' });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.json).sort(), ['endpoint', 'secret', 'success']);
    assert.deepEqual(Object.keys(res.json.endpoint), ['id', 'url', 'events', 'description', 'enabled', 'disabled_reason', 'created_at']);
    const { endpoint, secret } = res.json;
    assert.deepEqual(
      { url: endpoint.url, events: endpoint.events, description: endpoint.description, enabled: endpoint.enabled, disabled_reason: endpoint.disabled_reason },
      { url: PUBLIC_URL, events: null, description: 'CRM', enabled: true, disabled_reason: null },
    );
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.ok(Buffer.from(secret.slice('whsec_'.length), 'base64').length >= 24);

    const listed = await request(team, 'GET', '/api/v1/webhook-endpoints');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.json, { success: true, endpoints: [endpoint] });
    assert.ok(!listed.text.includes(secret.slice(6)), 'the list never shows the secret');
    const one = await request(team, 'GET', `/api/v1/webhook-endpoints/${endpoint.id}`);
    assert.deepEqual(one.json, { success: true, endpoint });
    assert.ok(!one.text.includes(secret.slice(6)));
  });

  test('events: the types listed, each once; an IPv6-only public host is fine', async () => {
    const team = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(team, { url: 'http://other.example.test:8443/x?y=1', events: ['call.ended', 'call.analyzed', 'call.ended'] });
    assert.deepEqual(endpoint.events, ['call.ended', 'call.analyzed']);
    assert.equal(endpoint.url, 'http://other.example.test:8443/x?y=1');
  });

  test('400 naming the field for a malformed URL, another scheme, an unknown or empty event list, an unknown field; nothing written', async () => {
    const team = await createTestTeam(api.pool);
    const cases: [unknown, string][] = [
      [{}, 'Invalid request: url is required'],
      [{ url: 'not a url' }, 'Invalid request: url must be an absolute URL such as https://example.com/webhooks'],
      [{ url: 'ftp://hooks.example.test/x' }, 'Invalid request: url must use https: or http:'],
      [{ url: 'javascript:alert(1)' }, 'Invalid request: url must use https: or http:'],
      [{ url: 42 }, 'Invalid request: url: expected string, received number'],
      [{ url: PUBLIC_URL, events: ['call.ended', 'call.exploded'] }, `Invalid request: events[1]: must be one of call.scheduled, call.started, call.ended, call.analyzed, web_session.redeemed, web_session.expired, batch.completed, hook_run.failed`],
      [{ url: PUBLIC_URL, events: [] }, 'Invalid request: events: must not be empty (omit it to receive every event type)'],
      [{ url: PUBLIC_URL, events: 'call.ended' }, 'Invalid request: events: must be a list of event types'],
      [{ url: PUBLIC_URL, secret: 'whsec_mine' }, 'Invalid request: unknown field secret'],
      [{ url: PUBLIC_URL, description: 'x'.repeat(501) }, 'Invalid request: description: must be at most 500 characters'],
    ];
    for (const [body, message] of cases) {
      const res = await request(team, 'POST', '/api/v1/webhook-endpoints', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.deepEqual(res.json, { success: false, message }, JSON.stringify(body));
    }
    assert.equal(await endpointCount(team), 0);
  });

  test('400 for a host that is or resolves to a loopback, private, link-local or other non-public address, or does not resolve', async () => {
    const team = await createTestTeam(api.pool);
    const refused = 'Invalid request: url must not point to a loopback, private, link-local or other non-public address';
    const cases: [string, string | RegExp][] = [
      ['http://127.0.0.1:8080/hooks', `${refused} (127.0.0.1 is loopback)`],
      ['http://0x7f.1/hooks', `${refused} (127.0.0.1 is loopback)`],
      ['http://[::1]:8080/hooks', `${refused} (::1 is loopback)`],
      ['http://[::ffff:127.0.0.1]/hooks', /\(::ffff:7f00:1 is loopback\)$/],
      ['http://localhost:8080/hooks', /^Invalid request: url must not point to .* \(localhost resolves to (127\.0\.0\.1|::1), loopback\)$/],
      ['https://internal.example.test/hooks', `${refused} (internal.example.test resolves to 127.0.0.1, loopback)`],
      ['https://mixed.example.test/hooks', `${refused} (mixed.example.test resolves to 10.0.0.7, private)`],
      ['http://10.1.2.3/hooks', `${refused} (10.1.2.3 is private)`],
      ['http://192.168.0.10/hooks', `${refused} (192.168.0.10 is private)`],
      ['http://169.254.169.254/latest/meta-data', `${refused} (169.254.169.254 is link-local)`],
      ['http://[fe80::1]/hooks', `${refused} (fe80::1 is link-local)`],
      ['http://0.0.0.0/hooks', `${refused} (0.0.0.0 is unspecified)`],
      ['https://nowhere.example.test/hooks', 'Invalid request: url host nowhere.example.test could not be resolved (ENOTFOUND)'],
    ];
    for (const [url, message] of cases) {
      const res = await request(team, 'POST', '/api/v1/webhook-endpoints', { url });
      assert.equal(res.status, 400, url);
      if (typeof message === 'string') assert.equal(res.json.message, message, url);
      else assert.match(res.json.message, message, url);
    }
    assert.equal(await endpointCount(team), 0);
  });

  test('an Idempotency-Key retry answers the same endpoint and secret, and makes no second endpoint', async () => {
    const team = await createTestTeam(api.pool);
    const headers = { 'Idempotency-Key': `endpoint-${randomUUID()}` };
    const first = await request(team, 'POST', '/api/v1/webhook-endpoints', { url: PUBLIC_URL }, headers);
    const second = await request(team, 'POST', '/api/v1/webhook-endpoints', { url: PUBLIC_URL }, headers);
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.json, first.json);
    assert.equal(await endpointCount(team), 1);
  });

  test('authenticated and rate-limited like every endpoint, and in the OpenAPI document', async () => {
    const team = await createTestTeam(api.pool);
    const anonymous = await api.request('GET', '/api/v1/webhook-endpoints');
    assert.deepEqual([anonymous.status, anonymous.json.message], [401, 'Missing or malformed Authorization header']);
    const listed = await request(team, 'GET', '/api/v1/webhook-deliveries');
    assert.ok(listed.headers.get('x-ratelimit-limit'));
    const created = await request(team, 'POST', '/api/v1/webhook-endpoints', { url: PUBLIC_URL });
    assert.ok(created.headers.get('x-ratelimit-remaining'));
    const doc = (await api.request('GET', '/api/v1/openapi.json')).json;
    for (const path of [
      '/api/v1/webhook-endpoints',
      '/api/v1/webhook-endpoints/{endpoint_id}',
      '/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret',
      '/api/v1/webhook-deliveries',
      '/api/v1/webhook-deliveries/{delivery_id}',
      '/api/v1/webhook-deliveries/{delivery_id}/redeliver',
    ]) {
      assert.ok(doc.paths[path], path);
    }
    assert.deepEqual(Object.keys(doc.paths['/api/v1/webhook-endpoints/{endpoint_id}']).sort(), ['delete', 'get', 'patch']);
  });
});

describe('PATCH, DELETE and rotate-secret', () => {
  test('PATCH changes only what is sent; enabled false and true; events null means every type', async () => {
    const team = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(team, { url: PUBLIC_URL, events: ['call.ended'], description: 'first' });
    const path = `/api/v1/webhook-endpoints/${endpoint.id}`;
    const described = await request(team, 'PATCH', path, { description: 'second', events: ['call.ended', 'batch.completed'] });
    assert.equal(described.status, 200);
    assert.deepEqual([described.json.endpoint.description, described.json.endpoint.events, described.json.endpoint.url], ['second', ['call.ended', 'batch.completed'], PUBLIC_URL]);
    const disabled = await request(team, 'PATCH', path, { enabled: false });
    assert.deepEqual([disabled.json.endpoint.enabled, disabled.json.endpoint.disabled_reason], [false, 'requested']);
    const enabled = await request(team, 'PATCH', path, { enabled: true, events: null, description: null, url: 'http://other.example.test/v2' });
    assert.deepEqual(
      { enabled: enabled.json.endpoint.enabled, reason: enabled.json.endpoint.disabled_reason, events: enabled.json.endpoint.events, description: enabled.json.endpoint.description, url: enabled.json.endpoint.url },
      { enabled: true, reason: null, events: null, description: null, url: 'http://other.example.test/v2' },
    );
  });

  test('PATCH re-enables an endpoint the service disabled, clearing its failure streak', async () => {
    const team = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(team);
    await api.pool.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'failing', failing_since = now() - interval '6 days' WHERE id = $1`, [endpoint.id]);
    const shown = await request(team, 'GET', `/api/v1/webhook-endpoints/${endpoint.id}`);
    assert.deepEqual([shown.json.endpoint.enabled, shown.json.endpoint.disabled_reason], [false, 'failing']);
    const res = await request(team, 'PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { enabled: true });
    assert.deepEqual([res.json.endpoint.enabled, res.json.endpoint.disabled_reason], [true, null]);
    const { rows } = await api.pool.query('SELECT failing_since FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    assert.equal(rows[0].failing_since, null);
  });

  test('PATCH: 400 for an empty body, a refused URL or a wrong type; the endpoint is unchanged', async () => {
    const team = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(team);
    const path = `/api/v1/webhook-endpoints/${endpoint.id}`;
    const cases: [unknown, string][] = [
      [{}, 'Invalid request: body must name at least one of url, events, enabled, description'],
      [{ url: 'https://internal.example.test/' }, 'Invalid request: url must not point to a loopback, private, link-local or other non-public address (internal.example.test resolves to 127.0.0.1, loopback)'],
      [{ enabled: 'yes' }, 'Invalid request: enabled: must be a boolean'],
      [{ events: ['nope'] }, 'Invalid request: events[0]: must be one of call.scheduled, call.started, call.ended, call.analyzed, web_session.redeemed, web_session.expired, batch.completed, hook_run.failed'],
      [{ enabled: true, secret: 'x' }, 'Invalid request: unknown field secret'],
    ];
    for (const [body, message] of cases) {
      const res = await request(team, 'PATCH', path, body);
      assert.deepEqual([res.status, res.json.message], [400, message], JSON.stringify(body));
    }
    assert.deepEqual((await request(team, 'GET', path)).json.endpoint, endpoint);
  });

  test('DELETE answers the id; the endpoint is gone from every lookup and a second DELETE is 404', async () => {
    const team = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(team);
    const path = `/api/v1/webhook-endpoints/${endpoint.id}`;
    const deleted = await request(team, 'DELETE', path);
    assert.deepEqual([deleted.status, deleted.json], [200, { success: true, endpoint_id: endpoint.id }]);
    for (const [method, p] of [['GET', path], ['PATCH', path], ['DELETE', path], ['POST', `${path}/rotate-secret`]] as const) {
      const res = await request(team, method, p, method === 'PATCH' ? { enabled: true } : undefined);
      assert.deepEqual([res.status, res.json], [404, { success: false, message: 'Webhook endpoint not found' }], `${method} ${p}`);
    }
    assert.deepEqual((await request(team, 'GET', '/api/v1/webhook-endpoints')).json.endpoints, []);
  });

  test('rotate-secret answers a new secret; the previous one is kept to sign for 24 hours', async () => {
    const team = await createTestTeam(api.pool);
    const { endpoint, secret } = await createEndpoint(team);
    const res = await request(team, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json).sort(), ['secret', 'success']);
    assert.match(res.json.secret, /^whsec_/);
    assert.notEqual(res.json.secret, secret);
    const { rows } = await api.pool.query('SELECT secret, previous_secret, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    // Stored encrypted (docs/security.md): opened, they are the new and the previous secret.
    const open = (stored: string) => secretBox(api.config).open(stored, webhookEndpointSecretContext(endpoint.id));
    assert.deepEqual([open(rows[0].secret), open(rows[0].previous_secret)], [res.json.secret, secret]);
    assert.ok(Math.abs(rows[0].previous_secret_expires_at.getTime() - (Date.now() + 24 * 3600_000)) < 60_000);
  });

  test('an id that is not a UUID is not found', async () => {
    const team = await createTestTeam(api.pool);
    for (const [method, p] of [['GET', '/api/v1/webhook-endpoints/abc'], ['DELETE', '/api/v1/webhook-endpoints/abc'], ['GET', '/api/v1/webhook-deliveries/abc'], ['POST', '/api/v1/webhook-deliveries/abc/redeliver']] as const) {
      const res = await request(team, method, p);
      assert.equal(res.status, 404, `${method} ${p}`);
      assert.match(res.json.message, /^Webhook (endpoint|delivery) not found$/);
    }
  });
});

describe('deliveries', () => {
  /** A team with an endpoint for every event and one scheduled call: its call.scheduled delivery. */
  async function teamWithDelivery() {
    const team = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(team);
    const call = await request(team, 'POST', '/api/v1/create-phone-call', {
      from_number: team.fromNumber,
      script_id: team.scriptId,
      contact: { phone_number: calleeNumber('3141'), first_name: 'Ada' },
      scheduled_time: '2035-01-01T00:00:00Z',
    });
    assert.equal(call.status, 201, call.text);
    const listed = await request(team, 'GET', '/api/v1/webhook-deliveries');
    assert.equal(listed.json.deliveries.length, 1);
    return { team, endpoint, callId: call.json.call_id as string, delivery: listed.json.deliveries[0] };
  }

  test('a scheduled call makes one call.scheduled delivery per endpoint, listed with its fields; its workflow runs on the webhook queue', async () => {
    const { team, endpoint, callId, delivery } = await teamWithDelivery();
    assert.deepEqual(Object.keys(delivery), [
      'id', 'endpoint_id', 'event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'last_error', 'next_attempt_at', 'created_at', 'delivered_at', 'redelivery_of',
    ]);
    assert.deepEqual(
      { endpoint_id: delivery.endpoint_id, event_type: delivery.event_type, status: delivery.status, attempts: delivery.attempts, delivered_at: delivery.delivered_at },
      { endpoint_id: endpoint.id, event_type: 'call.scheduled', status: 'pending', attempts: 0, delivered_at: null },
    );
    assert.match(delivery.event_id, /^evt_[0-9a-f]{32}$/);

    const detail = await request(team, 'GET', `/api/v1/webhook-deliveries/${delivery.id}`);
    assert.equal(detail.status, 200);
    assert.deepEqual(detail.json.delivery.attempt_log, []);
    const { payload } = detail.json.delivery;
    assert.deepEqual(Object.keys(payload), ['id', 'type', 'created_at', 'team_id', 'data']);
    assert.deepEqual([payload.id, payload.type, payload.team_id], [delivery.event_id, 'call.scheduled', team.teamId]);
    const result = await request(team, 'GET', `/api/v1/get-call-result/${callId}`);
    assert.deepEqual(payload.data.call, result.json.call, 'data.call is the get-call-result shape');

    await eventually(async () => (await api.pool.query('SELECT workflow_started_at FROM webhook_deliveries WHERE id = $1', [delivery.id])).rows[0].workflow_started_at !== null, 'the workflow start');
    const described = await env.client.workflow.getHandle(webhookDeliveryWorkflowId(delivery.id)).describe();
    assert.equal(described.taskQueue, webhookTaskQueue(TASK_QUEUE));
    assert.equal(described.typedSearchAttributes.get(TEAM_ID), team.teamId);
    assert.equal(described.typedSearchAttributes.get(WEBHOOK_ENDPOINT_ID), endpoint.id);
    assert.equal(described.typedSearchAttributes.get(WEBHOOK_EVENT_TYPE), 'call.scheduled');
  });

  test('filters: endpoint_id, event_type, call_id and status', async () => {
    const { team, endpoint, callId, delivery } = await teamWithDelivery();
    const ids = async (query: string) => (await request(team, 'GET', `/api/v1/webhook-deliveries?${query}`)).json.deliveries.map((d: { id: string }) => d.id);
    assert.deepEqual(await ids(`endpoint_id=${endpoint.id}`), [delivery.id]);
    assert.deepEqual(await ids(`endpoint_id=${randomUUID()}`), []);
    assert.deepEqual(await ids('event_type=call.scheduled'), [delivery.id]);
    assert.deepEqual(await ids('event_type=call.ended'), []);
    assert.deepEqual(await ids(`call_id=${callId.toUpperCase()}`), [delivery.id]);
    assert.deepEqual(await ids(`call_id=${randomUUID()}`), []);
    assert.deepEqual(await ids('status=pending'), [delivery.id]);
    assert.deepEqual(await ids('status=succeeded'), []);
  });

  test('400 naming the parameter for a bad limit, filter or cursor', async () => {
    const team = await createTestTeam(api.pool);
    const cases: [string, string][] = [
      ['limit=0', 'Invalid request: limit must be an integer from 1 to 500'],
      ['limit=501', 'Invalid request: limit must be an integer from 1 to 500'],
      ['limit=ten', 'Invalid request: limit must be an integer from 1 to 500'],
      ['status=lost', 'Invalid request: status must be one of pending, retrying, succeeded, failed'],
      ['event_type=call.exploded', 'Invalid request: event_type must be one of call.scheduled, call.started, call.ended, call.analyzed, web_session.redeemed, web_session.expired, batch.completed, hook_run.failed'],
      ['endpoint_id=abc', 'Invalid request: endpoint_id must be a UUID'],
      ['call_id=abc', 'Invalid request: call_id must be a UUID'],
      ['cursor=yesterday', 'Invalid request: cursor must be the meta.next_cursor of a previous page (a date-time)'],
    ];
    for (const [query, message] of cases) {
      const res = await request(team, 'GET', `/api/v1/webhook-deliveries?${query}`);
      assert.deepEqual([res.status, res.json], [400, { success: false, message }], query);
    }
  });

  test('keyset paging: newest first, every delivery once, next_cursor null on the last page', async () => {
    const team = await createTestTeam(api.pool);
    await createEndpoint(team);
    await createEndpoint(team, { url: 'http://other.example.test/second' });
    for (let i = 0; i < 4; i++) {
      await recordWebhookEvents(api.pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: team.teamId, error: `failure ${i}` })]);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await request(team, 'GET', `/api/v1/webhook-deliveries?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(res.status, 200);
      assert.equal(res.json.meta.limit, 3);
      seen.push(...res.json.deliveries.map((d: { id: string }) => d.id));
      cursor = res.json.meta.next_cursor;
      pages += 1;
    } while (cursor);
    assert.equal(pages, 3);
    assert.equal(seen.length, 8);
    assert.equal(new Set(seen).size, 8);
    const { rows } = await api.pool.query('SELECT id FROM webhook_deliveries WHERE team_id = $1 ORDER BY created_at DESC, seq DESC', [team.teamId]);
    assert.deepEqual(seen, rows.map((r) => r.id));
  });

  test('redeliver: 202 and a new delivery of the same event (same event id), its workflow started', async () => {
    const { team, delivery } = await teamWithDelivery();
    const res = await request(team, 'POST', `/api/v1/webhook-deliveries/${delivery.id}/redeliver`);
    assert.equal(res.status, 202);
    assert.deepEqual(Object.keys(res.json).sort(), ['delivery_id', 'success']);
    assert.notEqual(res.json.delivery_id, delivery.id);
    const again = (await request(team, 'GET', `/api/v1/webhook-deliveries/${res.json.delivery_id}`)).json.delivery;
    assert.deepEqual(
      { event_id: again.event_id, endpoint_id: again.endpoint_id, redelivery_of: again.redelivery_of, status: again.status },
      { event_id: delivery.event_id, endpoint_id: delivery.endpoint_id, redelivery_of: delivery.id, status: 'pending' },
    );
    assert.equal(again.payload.id, delivery.event_id);
    await eventually(async () => {
      try {
        await env.client.workflow.getHandle(webhookDeliveryWorkflowId(res.json.delivery_id)).describe();
        return true;
      } catch {
        return false;
      }
    }, 'the redelivery workflow');
  });

  test('redeliver to a disabled or deleted endpoint is a 409 naming why', async () => {
    const { team, endpoint, delivery } = await teamWithDelivery();
    await request(team, 'PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { enabled: false });
    const disabled = await request(team, 'POST', `/api/v1/webhook-deliveries/${delivery.id}/redeliver`);
    assert.deepEqual([disabled.status, disabled.json.message], [409, 'Delivery cannot be redelivered: its endpoint is disabled (requested)']);
    await request(team, 'DELETE', `/api/v1/webhook-endpoints/${endpoint.id}`);
    const deleted = await request(team, 'POST', `/api/v1/webhook-deliveries/${delivery.id}/redeliver`);
    assert.deepEqual([deleted.status, deleted.json.message], [409, 'Delivery cannot be redelivered: its endpoint was deleted']);
    assert.equal((await request(team, 'GET', `/api/v1/webhook-deliveries/${delivery.id}`)).status, 200, 'the deliveries of a deleted endpoint stay readable');
  });
});

describe('team isolation', () => {
  test('another team’s endpoint and delivery are 404 on every endpoint, and never listed', async () => {
    const owner = await createTestTeam(api.pool);
    const other = await createTestTeam(api.pool);
    const { endpoint } = await createEndpoint(owner);
    await recordWebhookEvents(api.pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: owner.teamId, error: 'x' })]);
    const [delivery] = (await request(owner, 'GET', '/api/v1/webhook-deliveries')).json.deliveries;
    assert.ok(delivery);
    const endpointNotFound = { success: false, message: 'Webhook endpoint not found' };
    const deliveryNotFound = { success: false, message: 'Webhook delivery not found' };
    const cases: [string, string, unknown, unknown][] = [
      ['GET', `/api/v1/webhook-endpoints/${endpoint.id}`, undefined, endpointNotFound],
      ['PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { enabled: false }, endpointNotFound],
      ['DELETE', `/api/v1/webhook-endpoints/${endpoint.id}`, undefined, endpointNotFound],
      ['POST', `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, undefined, endpointNotFound],
      ['GET', `/api/v1/webhook-deliveries/${delivery.id}`, undefined, deliveryNotFound],
      ['POST', `/api/v1/webhook-deliveries/${delivery.id}/redeliver`, undefined, deliveryNotFound],
    ];
    for (const [method, path, body, expected] of cases) {
      const res = await request(other, method, path, body);
      assert.deepEqual([res.status, res.json], [404, expected], `${method} ${path}`);
    }
    assert.deepEqual((await request(other, 'GET', '/api/v1/webhook-endpoints')).json.endpoints, []);
    assert.deepEqual((await request(other, 'GET', '/api/v1/webhook-deliveries')).json.deliveries, []);
    assert.deepEqual((await request(other, 'GET', `/api/v1/webhook-deliveries?endpoint_id=${endpoint.id}`)).json.deliveries, []);
    // Nothing of the owner's changed.
    const mine = (await request(owner, 'GET', `/api/v1/webhook-endpoints/${endpoint.id}`)).json.endpoint;
    assert.equal(mine.enabled, true);
    assert.equal((await request(owner, 'GET', '/api/v1/webhook-deliveries')).json.deliveries.length, 1);
  });

  test('an event of one team is delivered to that team’s endpoints only', async () => {
    const owner = await createTestTeam(api.pool);
    const other = await createTestTeam(api.pool);
    await createEndpoint(other);
    const { endpoint } = await createEndpoint(owner);
    const deliveries = await recordWebhookEvents(api.pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: owner.teamId, error: 'x' })]);
    assert.deepEqual(deliveries.map((d) => d.endpoint_id), [endpoint.id]);
  });
});
