// The typed TypeScript client (clients/typescript) against the real app: the API over the test
// Postgres, a call worker with the real activities and the simulator on a time-skipping test
// server (calls run in real time: nothing here awaits a workflow through the skipping client).
// The 429 retry meets the real rate limiter on an app whose limiter clock the test drives.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { contactRoutes } from '../../src/api/contacts/routes.js';
import { ApiError, createClient, retryAfterSeconds, type VoiceAgentClient } from '../../clients/typescript/index.js';
import { startLimitedApi, TestClock, type LimitedApi } from '../api/rateLimitHelpers.js';
import { createTestTeam, startTestApi, testPool, type TestApi, type TestTeam } from '../support/app.js';
import { callTestConfig, calleeNumber, createCallWorker } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const TASK_QUEUE = 'typescript-client-test';
const ENDED = new Set(['scheduled', 'in-progress']);

let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;
let client: VoiceAgentClient;

before(async () => {
  env = await createTimeSkippingEnv();
  const overrides = { TEMPORAL_TASK_QUEUE: TASK_QUEUE, SIMULATOR_CALL_SECONDS: '1' } as const;
  app = await startTestApi({ temporal: env.client, config: overrides });
  worker = await createCallWorker(env, app.pool, callTestConfig(overrides));
  running = worker.run();
  team = await createTestTeam(app.pool);
  client = createClient({ baseUrl: app.url, apiKey: team.apiKey });
});

after(async () => {
  worker?.shutdown();
  await running;
  await app?.close();
  await env?.teardown();
});

/** A phone call's body for the test team, scheduled far ahead unless `now`. */
function phoneCall(phoneNumber: string, scheduledTime?: string) {
  return { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: phoneNumber }, ...(scheduledTime ? { scheduled_time: scheduledTime } : {}) };
}

describe('through the generated client', () => {
  test('create a contact, schedule a simulated call, follow it to its result', async () => {
    const phone = calleeNumber('5100');
    const contact = await client.POST('/api/v1/create-contact', { body: { phone_number: phone, first_name: 'Ada', last_name: 'Lovelace' } });
    assert.equal(contact.response.status, 201, JSON.stringify(contact.error));
    const fetched = await client.GET('/api/v1/get-contact/{phone_number}', { params: { path: { phone_number: phone } } });
    assert.equal(fetched.data?.contact.id, contact.data?.contact_id);
    assert.equal(fetched.data?.contact.first_name, 'Ada');

    const created = await client.POST('/api/v1/create-phone-call', { body: phoneCall(phone) });
    assert.equal(created.response.status, 201, JSON.stringify(created.error));
    assert.ok(created.data);
    assert.equal(created.data.contact_id, contact.data?.contact_id);
    const callId = created.data.call_id;

    // Following the call: its status until it leaves scheduled / in-progress (a stuck call fails here, not by a timing).
    const deadline = Date.now() + 60_000;
    let status = created.data.status as string;
    while (ENDED.has(status)) {
      assert.ok(Date.now() < deadline, `call ${callId} still ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const polled = await client.GET('/api/v1/get-call-status/{call_id}', { params: { path: { call_id: callId } } });
      assert.ok(polled.data, JSON.stringify(polled.error));
      status = polled.data.call.status;
    }
    const result = await client.GET('/api/v1/get-call-result/{call_id}', { params: { path: { call_id: callId } } });
    assert.ok(result.data, JSON.stringify(result.error));
    assert.equal(result.data.call.status, 'completed');
    assert.equal(result.data.call.end_reason, 'agent_hangup');
    assert.equal(result.data.call.contact_id, contact.data?.contact_id);
    assert.equal(typeof result.data.call.duration, 'number');
  });

  test('the call log pages with the iterator across pages: every call once, newest first', async () => {
    const pagingTeam = await createTestTeam(app.pool);
    const pagingClient = createClient({ baseUrl: app.url, apiKey: pagingTeam.apiKey });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      const created = await pagingClient.POST('/api/v1/create-phone-call', {
        body: { ...phoneCall(calleeNumber(`52${i}0`), '2099-01-01T12:00:00Z'), from_number: pagingTeam.fromNumber, script_id: pagingTeam.scriptId },
      });
      assert.ok(created.data, JSON.stringify(created.error));
      made.push(created.data.call_id);
    }
    const pages: number[] = [];
    const seen: string[] = [];
    for await (const call of pagingClient.paginate.calls({ limit: 2 })) seen.push(call.id);
    // Three pages of two: the iterator asked for each next cursor itself.
    for (let cursor: string | null | undefined; ; ) {
      const page = await pagingClient.GET('/api/v1/calls', { params: { query: { limit: 2, cursor: cursor ?? undefined } } });
      assert.ok(page.data);
      pages.push(page.data.calls.length);
      cursor = page.data.meta.next_cursor;
      if (!cursor) break;
    }
    assert.deepEqual(pages, [2, 2, 1]);
    assert.deepEqual(seen, [...made].reverse());
  });

  test('the other cursor-paged lists iterate across pages too: do-not-call, a list’s contacts, webhook deliveries', async () => {
    const pagingTeam = await createTestTeam(app.pool);
    const pagingClient = createClient({ baseUrl: app.url, apiKey: pagingTeam.apiKey });
    const numbers = ['5500', '5501', '5502'].map(calleeNumber);
    for (const phone of numbers) {
      const added = await pagingClient.POST('/api/v1/do-not-call', { body: { phone_number: phone, reason: 'asked' } });
      assert.ok(added.data, JSON.stringify(added.error));
    }
    const blocked: string[] = [];
    for await (const entry of pagingClient.paginate.doNotCall({ limit: 2 })) blocked.push(entry.phone_number);
    assert.deepEqual(blocked, [...numbers].reverse());

    const list = await pagingClient.POST('/api/v1/lists', { body: { name: 'client paging' } });
    assert.ok(list.data, JSON.stringify(list.error));
    const listId = list.data.list_id;
    const members = ['5600', '5601', '5602'].map((last) => ({ phone_number: calleeNumber(last), first_name: `Member ${last}` }));
    for (const contact of members) {
      const added = await pagingClient.POST('/api/v1/lists/{list_id}/contacts', { params: { path: { list_id: listId } }, body: { contact } });
      assert.ok(added.data, JSON.stringify(added.error));
    }
    const names: (string | null)[] = [];
    for await (const contact of pagingClient.paginate.listContacts(listId, { limit: 2 })) names.push(contact.first_name);
    assert.deepEqual(names, members.map((m) => m.first_name).reverse());

    // No endpoint, so no delivery: the iterator's request is accepted and it ends at once.
    const deliveries: string[] = [];
    for await (const delivery of pagingClient.paginate.webhookDeliveries({ limit: 2 })) deliveries.push(delivery.id);
    assert.deepEqual(deliveries, []);
  });

  test('a replayed create with the same Idempotency-Key answers the same call', async () => {
    const key = `client-test-${Date.now()}`;
    const body = phoneCall(calleeNumber('5300'), '2099-01-01T12:00:00Z');
    const first = await client.POST('/api/v1/create-phone-call', { params: { header: { 'Idempotency-Key': key } }, body });
    const second = await client.POST('/api/v1/create-phone-call', { params: { header: { 'Idempotency-Key': key } }, body });
    assert.equal(first.response.status, 201);
    assert.equal(second.response.status, 201);
    assert.equal(second.response.headers.get('Idempotent-Replayed'), 'true');
    assert.equal(second.data?.call_id, first.data?.call_id);
    // The same key with another body: the service's 422, typed as its error schema.
    const other = await client.POST('/api/v1/create-phone-call', { params: { header: { 'Idempotency-Key': key } }, body: phoneCall(calleeNumber('5301')) });
    assert.equal(other.response.status, 422);
    assert.equal(other.error?.success, false);
  });

  test('a 4xx comes back as the error schema with the service’s message; an iterator throws it as ApiError', async () => {
    const bad = await client.POST('/api/v1/create-contact', { body: { phone_number: '12', first_name: 'Ada' } });
    assert.equal(bad.response.status, 400);
    assert.equal(bad.data, undefined);
    assert.deepEqual(bad.error, { success: false, message: 'Invalid request: phone_number is not a valid phone number' });

    const iterating = async () => {
      for await (const call of client.paginate.calls({ limit: 0 })) assert.fail(`no item expected, got ${call.id}`);
    };
    await assert.rejects(iterating, (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 400);
      assert.equal(err.message, 'Invalid request: limit must be an integer from 1 to 500');
      assert.deepEqual(err.body, { success: false, message: err.message });
      return true;
    });
  });
});

describe('a 429 from the rate limiter', () => {
  let limited: LimitedApi;
  let clock: TestClock;

  before(async () => {
    clock = new TestClock();
    // One write per key per rolling minute: the second create in a minute is refused.
    limited = await startLimitedApi({ routes: contactRoutes, clock, config: { RATE_LIMIT_PER_KEY_WRITES: '1' } });
  });

  after(async () => {
    await limited?.close();
  });

  /** A client of the limited app, with a team (so a key) of its own, whose waits may move the limiter's clock; it records what it sent. */
  async function limitedClient(opts: { maxAttempts?: number; moveClock: boolean }) {
    const limitedTeam = await createTestTeam(await testPool());
    const waits: number[] = [];
    const sent: { method: string; idempotencyKey: string | null }[] = [];
    const limitedClient = createClient({
      baseUrl: limited.url,
      apiKey: limitedTeam.apiKey,
      idempotencyKeys: 'auto',
      rateLimitRetry: {
        maxAttempts: opts.maxAttempts,
        wait: async (ms) => {
          waits.push(ms);
          if (opts.moveClock) clock.advance(ms);
        },
      },
      fetch: (request) => {
        sent.push({ method: request.method, idempotencyKey: request.headers.get('Idempotency-Key') });
        return fetch(request);
      },
    });
    return { client: limitedClient, waits, sent };
  }

  test('is retried after its Retry-After, with the same generated Idempotency-Key', async () => {
    const { client: retrying, waits, sent } = await limitedClient({ moveClock: true });
    const first = await retrying.POST('/api/v1/create-contact', { body: { phone_number: calleeNumber('5400'), first_name: 'Ada' } });
    assert.equal(first.response.status, 201, JSON.stringify(first.error));
    sent.length = 0;
    const second = await retrying.POST('/api/v1/create-contact', { body: { phone_number: calleeNumber('5401'), first_name: 'Grace' } });
    assert.equal(second.response.status, 201, JSON.stringify(second.error));
    // The limiter answered 429 Retry-After: 60 (its window, on the clock this test drives); the client waited that long, once.
    assert.deepEqual(waits, [60_000]);
    assert.equal(sent.length, 2);
    assert.ok(sent[0].idempotencyKey && /^[0-9a-f-]{36}$/.test(sent[0].idempotencyKey), 'a generated key');
    assert.equal(sent[1].idempotencyKey, sent[0].idempotencyKey);
  });

  test('bounded: after maxAttempts the 429 comes back typed, and nothing more is sent', async () => {
    const { client: bounded, waits, sent } = await limitedClient({ maxAttempts: 2, moveClock: false });
    const first = await bounded.POST('/api/v1/create-contact', { body: { phone_number: calleeNumber('5402'), first_name: 'Ada' } });
    assert.equal(first.response.status, 201, JSON.stringify(first.error));
    sent.length = 0;
    waits.length = 0;
    const refused = await bounded.POST('/api/v1/create-contact', { body: { phone_number: calleeNumber('5403'), first_name: 'Grace' } });
    assert.equal(refused.response.status, 429);
    assert.deepEqual(refused.error, { success: false, message: 'Rate limit exceeded' });
    assert.equal(sent.length, 2);
    assert.equal(waits.length, 1);
  });
});

test('Retry-After: delta-seconds or an HTTP date; anything else is not a wait', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);
  assert.equal(retryAfterSeconds('7', now), 7);
  assert.equal(retryAfterSeconds(' 0 ', now), 0);
  assert.equal(retryAfterSeconds('Thu, 01 Jan 2026 12:00:05 GMT', now), 5);
  assert.equal(retryAfterSeconds('Thu, 01 Jan 2026 11:59:00 GMT', now), 0);
  assert.equal(retryAfterSeconds('soon', now), undefined);
  assert.equal(retryAfterSeconds(null, now), undefined);
});
