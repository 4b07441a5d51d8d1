// One attempt of an event webhook, without Temporal: the HTTP POST (src/webhooks/sender.ts)
// against real local receivers, and the attempt use case (sendWebhookDelivery) over the real
// Postgres: signatures, the schedule, 410, the 5-day rule, deleted endpoints, rotation, and
// the address check at send time with the connection pinned to the checked address.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { findTeamWebhookDelivery, type DeliveryToStart } from '../../src/db/repositories/webhookDeliveries.js';
import { findTeamWebhookEndpoint } from '../../src/db/repositories/webhookEndpoints.js';
import { recordLostWebhookAttempt, sendWebhookDelivery, type WebhookSendDeps } from '../../src/services/webhookDeliveries.js';
import { createWebhookEndpoint, deleteWebhookEndpoint, rotateWebhookEndpointSecret } from '../../src/services/webhookEndpoints.js';
import { hookRunFailedEvent, recordWebhookEvents } from '../../src/services/webhookEvents.js';
import type { HostResolver } from '../../src/webhooks/addresses.js';
import { postWebhook } from '../../src/webhooks/sender.js';
import { createTestTeam, testConfig, testPool, type TestTeam } from '../support/app.js';
import { startWebhookReceiver, verifyStandardWebhook, type WebhookReceiver } from '../support/webhookReceiver.js';
import { randomUUID } from 'node:crypto';

let pool: Pool;
let receiver: WebhookReceiver;
let team: TestTeam;

before(async () => {
  pool = await testPool();
  receiver = await startWebhookReceiver();
  team = await createTestTeam(pool);
});

after(async () => {
  await receiver?.close();
  await pool?.end();
});

/** A resolver that answers from a table and counts its lookups. */
function tableResolver(table: Record<string, string[]>): HostResolver & { lookups: string[] } {
  const lookups: string[] = [];
  const resolve = async (host: string) => {
    lookups.push(host);
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { lookups });
}

function sendDeps(overrides: { allowPrivate?: boolean; schedule?: string; resolveHost?: HostResolver } = {}): WebhookSendDeps {
  return {
    pool,
    config: testConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: String(overrides.allowPrivate ?? true) as 'true', WEBHOOK_RETRY_SCHEDULE: overrides.schedule ?? '1,2' }),
    resolveHost: overrides.resolveHost,
  };
}

async function endpointFor(url: string, deps = sendDeps()) {
  return createWebhookEndpoint(deps, { teamId: team.teamId, url });
}

/** A fresh hook_run.failed event of the team, delivered to its enabled endpoints (rows only, no workflow). */
async function newDeliveries(): Promise<DeliveryToStart[]> {
  return recordWebhookEvents(pool, [hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: team.teamId, error: 'test failure' })]);
}

/** A team with exactly one endpoint, and one delivery to it. */
async function oneDelivery(url: string, deps = sendDeps()) {
  team = await createTestTeam(pool);
  const created = await endpointFor(url, deps);
  const [delivery] = await newDeliveries();
  assert.ok(delivery, 'the event fanned out to the endpoint');
  return { ...created, delivery };
}

const row = async (id: string) => (await findTeamWebhookDelivery(pool, team.teamId, id))!;
const attempts = async (id: string) => (await pool.query('SELECT * FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt', [id])).rows;

describe('postWebhook', () => {
  const post = (url: string, opts: { resolver?: HostResolver; allowPrivate?: boolean; timeoutMs?: number } = {}) =>
    postWebhook({ url, headers: { 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: opts.timeoutMs ?? 10_000, resolver: opts.resolver ?? tableResolver({}), allowPrivate: opts.allowPrivate ?? true });

  test('a 2xx is success; another status is a failure naming it and the start of the answer', async () => {
    receiver.answer(204);
    const ok = await post(receiver.url);
    assert.deepEqual([ok.statusCode, ok.error], [204, null]);
    assert.ok(ok.latencyMs >= 0);
    receiver.answer(503);
    const failed = await post(receiver.url);
    assert.deepEqual([failed.statusCode, failed.error], [503, 'HTTP 503: answered 503']);
    receiver.answer(200);
  });

  test('a redirect is not followed', async () => {
    receiver.answer(302);
    const redirected = await post(receiver.url);
    assert.equal(redirected.statusCode, 302);
    assert.match(redirected.error!, /^HTTP 302 \(redirects are not followed\)/);
    receiver.answer(200);
  });

  test('no answer within the deadline is a failure, and so is a refused connection', async () => {
    receiver.answer('hang');
    const before = receiver.received.length;
    const hung = await post(receiver.url, { timeoutMs: 300 });
    assert.deepEqual([hung.statusCode, hung.error], [null, 'No answer within 0.3 s']);
    assert.equal(receiver.received.length, before + 1, 'the request did arrive');
    receiver.answer(200);
    const refused = await post('http://127.0.0.1:1/hooks');
    assert.equal(refused.statusCode, null);
    assert.match(refused.error!, /ECONNREFUSED/);
  });

  test('the host is resolved once and the connection goes to that address, whatever DNS says later', async () => {
    let calls = 0;
    // The first answer is the receiver; any later lookup would name a port where nothing listens.
    const rebinding: HostResolver = async () => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '127.0.0.2', family: 4 }]);
    const before = receiver.received.length;
    const result = await post(`http://receiver.test:${receiver.port}/hooks`, { resolver: rebinding });
    assert.equal(result.error, null);
    assert.equal(calls, 1);
    assert.equal(receiver.received.length, before + 1);
    assert.equal(receiver.received.at(-1)!.headers.host, `receiver.test:${receiver.port}`);
  });

  test('without WEBHOOK_ALLOW_PRIVATE_URLS a host resolving to any non-public address is refused before connecting', async () => {
    const before = receiver.received.length;
    const resolver = tableResolver({ 'evil.test': ['127.0.0.1'], 'mixed.test': ['93.184.216.34', '10.0.0.5'] });
    const loopback = await post(`http://evil.test:${receiver.port}/hooks`, { resolver, allowPrivate: false });
    assert.equal(loopback.error, 'Refused: url must not point to a loopback, private, link-local or other non-public address (evil.test resolves to 127.0.0.1, loopback)');
    const mixed = await post(`http://mixed.test:${receiver.port}/hooks`, { resolver, allowPrivate: false });
    assert.match(mixed.error!, /mixed\.test resolves to 10\.0\.0\.5, private/);
    const literal = await post(receiver.url, { allowPrivate: false });
    assert.match(literal.error!, /127\.0\.0\.1 is loopback/);
    const unknown = await post('http://nowhere.test/hooks', { resolver, allowPrivate: false });
    assert.equal(unknown.error, 'Refused: url host nowhere.test could not be resolved (ENOTFOUND)');
    assert.equal(receiver.received.length, before, 'nothing reached the receiver');
  });
});

describe('sendWebhookDelivery', () => {
  test('a 2xx: the signed event, delivered once; the delivery succeeded with one attempt logged', async () => {
    receiver.answer(200);
    const { endpoint, secret, delivery } = await oneDelivery(receiver.url);
    const before = receiver.received.length;
    const result = await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 1 });
    assert.deepEqual(result, { status: 'succeeded', statusCode: 200, retryInSeconds: null });
    const got = receiver.received[before];
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['webhook-id'], delivery.event_id);
    assert.equal(got.json.id, delivery.event_id);
    assert.deepEqual(Object.keys(got.json), ['id', 'type', 'created_at', 'team_id', 'data']);
    assert.equal(got.json.team_id, team.teamId);
    assert.deepEqual(Object.keys(got.json.data.hook_run), ['id', 'hook_id', 'status', 'error']);
    assert.ok(verifyStandardWebhook(secret, got.headers, got.body));
    assert.ok(!verifyStandardWebhook(secret, got.headers, `${got.body} `), 'a changed body fails verification');
    const after = await row(delivery.id);
    assert.deepEqual([after.status, after.attempts, after.last_status_code, after.last_error, after.next_attempt_at], ['succeeded', 1, 200, null, null]);
    assert.ok(after.delivered_at);
    const [logged] = await attempts(delivery.id);
    assert.deepEqual([logged.attempt, logged.status_code, logged.error], [1, 200, null]);
    // Asked again (a replayed activity), a finished delivery sends nothing.
    assert.deepEqual(await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 2 }), { status: 'succeeded', statusCode: null, retryInSeconds: null });
    assert.equal(receiver.received.length, before + 1);
    assert.equal((await findTeamWebhookEndpoint(pool, team.teamId, endpoint.id))!.failing_since, null);
  });

  test('failures follow WEBHOOK_RETRY_SCHEDULE: retrying with the next delay, failed after the last attempt', async () => {
    receiver.answer(500);
    const { endpoint, delivery } = await oneDelivery(receiver.url);
    const deps = sendDeps({ schedule: '1,2' });
    const first = await sendWebhookDelivery(deps, { deliveryId: delivery.id, attempt: 1 });
    assert.deepEqual(first, { status: 'retrying', statusCode: 500, retryInSeconds: 1 });
    const retrying = await row(delivery.id);
    assert.equal(retrying.status, 'retrying');
    assert.equal(retrying.last_error, 'HTTP 500: answered 500');
    assert.ok(Math.abs(retrying.next_attempt_at!.getTime() - (Date.now() + 1000)) < 1000);
    assert.ok((await findTeamWebhookEndpoint(pool, team.teamId, endpoint.id))!.failing_since, 'the failure streak started');
    assert.equal((await sendWebhookDelivery(deps, { deliveryId: delivery.id, attempt: 2 })).retryInSeconds, 2);
    assert.deepEqual(await sendWebhookDelivery(deps, { deliveryId: delivery.id, attempt: 3 }), { status: 'failed', statusCode: 500, retryInSeconds: null });
    const failed = await row(delivery.id);
    assert.deepEqual([failed.status, failed.attempts, failed.next_attempt_at], ['failed', 3, null]);
    assert.deepEqual((await attempts(delivery.id)).map((a) => a.status_code), [500, 500, 500]);
    receiver.answer(200);
  });

  test('a 410 fails the delivery and disables the endpoint; its other deliveries end without a request', async () => {
    receiver.answer(410);
    const { endpoint, delivery } = await oneDelivery(receiver.url);
    const [second] = await newDeliveries();
    assert.deepEqual(await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 1 }), { status: 'failed', statusCode: 410, retryInSeconds: null });
    const disabled = (await findTeamWebhookEndpoint(pool, team.teamId, endpoint.id))!;
    assert.deepEqual([disabled.enabled, disabled.disabled_reason], [false, 'endpoint_gone']);
    assert.match((await row(delivery.id)).last_error!, /the endpoint is gone and was disabled/);
    receiver.answer(200);
    const before = receiver.received.length;
    assert.deepEqual(await sendWebhookDelivery(sendDeps(), { deliveryId: second.id, attempt: 1 }), { status: 'failed', statusCode: null, retryInSeconds: null });
    assert.equal((await row(second.id)).last_error, 'The endpoint is disabled');
    assert.equal(receiver.received.length, before);
    assert.deepEqual(await newDeliveries(), [], 'a disabled endpoint gets no new deliveries');
  });

  test('an endpoint whose attempts have all failed for 5 days is disabled at its next failure; a success ends the streak', async () => {
    receiver.answer(500);
    const { endpoint, delivery } = await oneDelivery(receiver.url);
    await pool.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '4 days 23 hours' WHERE id = $1`, [endpoint.id]);
    await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 1 });
    assert.equal((await findTeamWebhookEndpoint(pool, team.teamId, endpoint.id))!.enabled, true, 'not yet 5 days');
    await pool.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [endpoint.id]);
    await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 2 });
    const disabled = (await findTeamWebhookEndpoint(pool, team.teamId, endpoint.id))!;
    assert.deepEqual([disabled.enabled, disabled.disabled_reason], [false, 'failing']);

    receiver.answer(200);
    const other = await oneDelivery(receiver.url);
    await pool.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '3 days' WHERE id = $1`, [other.endpoint.id]);
    await sendWebhookDelivery(sendDeps(), { deliveryId: other.delivery.id, attempt: 1 });
    assert.equal((await findTeamWebhookEndpoint(pool, team.teamId, other.endpoint.id))!.failing_since, null);
  });

  test('a deleted endpoint receives nothing more: its delivery ends failed', async () => {
    const { endpoint, delivery } = await oneDelivery(receiver.url);
    await deleteWebhookEndpoint({ pool }, team.teamId, endpoint.id);
    const before = receiver.received.length;
    assert.equal((await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 1 })).status, 'failed');
    assert.equal((await row(delivery.id)).last_error, 'The endpoint was deleted');
    assert.equal(receiver.received.length, before);
  });

  test('after a rotation both secrets sign for 24 hours, then only the new one', async () => {
    receiver.answer(200);
    const { endpoint, secret: oldSecret } = await oneDelivery(receiver.url);
    const newSecret = await rotateWebhookEndpointSecret(sendDeps(), team.teamId, endpoint.id);
    assert.notEqual(newSecret, oldSecret);
    const [during] = await newDeliveries();
    await sendWebhookDelivery(sendDeps(), { deliveryId: during.id, attempt: 1 });
    const signedTwice = receiver.received.at(-1)!;
    assert.equal(String(signedTwice.headers['webhook-signature']).split(' ').length, 2);
    assert.ok(verifyStandardWebhook(newSecret, signedTwice.headers, signedTwice.body));
    assert.ok(verifyStandardWebhook(oldSecret, signedTwice.headers, signedTwice.body));

    await pool.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [endpoint.id]);
    const [later] = await newDeliveries();
    await sendWebhookDelivery(sendDeps(), { deliveryId: later.id, attempt: 1 });
    const signedOnce = receiver.received.at(-1)!;
    assert.equal(String(signedOnce.headers['webhook-signature']).split(' ').length, 1);
    assert.ok(verifyStandardWebhook(newSecret, signedOnce.headers, signedOnce.body));
    assert.ok(!verifyStandardWebhook(oldSecret, signedOnce.headers, signedOnce.body));
  });

  test('DNS rebinding: an endpoint whose host resolved to a public address at creation and to 127.0.0.1 now is refused at send time', async () => {
    const answers: Record<string, string[]> = { 'hooks.rebind.test': ['93.184.216.34'] };
    const resolver: HostResolver = async (host) => (answers[host] ?? []).map((address) => ({ address, family: 4 }));
    const strict = sendDeps({ allowPrivate: false, resolveHost: resolver });
    const { delivery } = await oneDelivery(`http://hooks.rebind.test:${receiver.port}/hooks`, strict);
    answers['hooks.rebind.test'] = ['127.0.0.1'];
    const before = receiver.received.length;
    const result = await sendWebhookDelivery(strict, { deliveryId: delivery.id, attempt: 1 });
    assert.deepEqual(result, { status: 'retrying', statusCode: null, retryInSeconds: 1 });
    assert.equal(
      (await row(delivery.id)).last_error,
      'Refused: url must not point to a loopback, private, link-local or other non-public address (hooks.rebind.test resolves to 127.0.0.1, loopback)',
    );
    assert.equal(receiver.received.length, before);
  });

  test('a lost attempt counts as a failed one on the schedule, and never overwrites a finished delivery', async () => {
    receiver.answer(200);
    const { delivery } = await oneDelivery(receiver.url);
    const lost = await recordLostWebhookAttempt(sendDeps(), { deliveryId: delivery.id, attempt: 1, error: 'Activity task timed out' });
    assert.deepEqual(lost, { status: 'retrying', statusCode: null, retryInSeconds: 1 });
    assert.equal((await row(delivery.id)).last_error, 'The attempt did not finish: Activity task timed out');
    await sendWebhookDelivery(sendDeps(), { deliveryId: delivery.id, attempt: 2 });
    assert.deepEqual(await recordLostWebhookAttempt(sendDeps(), { deliveryId: delivery.id, attempt: 2, error: 'late' }), { status: 'succeeded', statusCode: null, retryInSeconds: null });
    assert.deepEqual((await attempts(delivery.id)).map((a) => [a.attempt, a.status_code]), [[1, null], [2, 200]]);
  });
});
