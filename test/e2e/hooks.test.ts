// Webhook automations end to end in the time-skipping environment: the real API and
// Postgres, a worker with every real activity (the simulator as telephony), from the
// request to the run, the scheduled call, and the completed simulated call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { signWebhookBody } from '../../src/domain/hookSignature.js';
import { insertList } from '../../src/db/repositories/lists.js';
import { hookRunCallId } from '../../src/services/hookAutomations.js';
import { secretBox } from '../../src/config/index.js';
import { createHook } from '../../src/services/hooks.js';
import { callWorkflowId, hookRunWorkflowId, type CallWorkflowResult, type HookRunResult } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, calleeNumber, createCallWorker } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const TASK_QUEUE = 'hooks-e2e';
const SECRET = 'whsec_e2e';

let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;

before(async () => {
  env = await createTimeSkippingEnv();
  const overrides = { TEMPORAL_TASK_QUEUE: TASK_QUEUE, TRUST_PROXY: 'true' } as const;
  app = await startTestApi({ temporal: env.client, config: overrides });
  worker = await createCallWorker(env, app.pool, callTestConfig(overrides));
  running = worker.run();
  team = await createTestTeam(app.pool);
});

after(async () => {
  worker?.shutdown();
  await running;
  await app?.close();
  await env?.teardown();
});

let ipSeq = 0;
function post(path: string, rawBody: string, headers: Record<string, string> = {}) {
  ipSeq += 1;
  return app.request('POST', path, { rawBody, headers: { 'X-Forwarded-For': `10.20.0.${ipSeq}`, ...headers } });
}

const runResult = (runId: string): Promise<HookRunResult> => env.client.workflow.getHandle(hookRunWorkflowId(runId)).result();

async function runFailure(runId: string): Promise<ApplicationFailure> {
  const error = await runResult(runId).then(
    () => assert.fail('the run should have failed'),
    (err: unknown) => err,
  );
  assert.ok(error instanceof WorkflowFailedError);
  const cause = error.cause instanceof ApplicationFailure ? error.cause : error.cause?.cause;
  assert.ok(cause instanceof ApplicationFailure);
  return cause;
}

const count = async (sql: string, params: unknown[]) => Number((await app.pool.query<{ n: string }>(sql, params)).rows[0].n);

describe('schedule_call automation', () => {
  test('a signed request upserts the contact, schedules a call with the hook’s script from its number, and the simulated call completes', async () => {
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: SECRET, automation: { kind: 'schedule_call', script_id: team.scriptId, from_number: team.fromNumber } }, secretBox(app.config));
    const phone = calleeNumber('4321');
    const body = JSON.stringify({ event: 'lead.created', contact: { phone_number: phone, first_name: 'Ada', last_name: 'Lovelace' }, email: 'ada@example.com' });
    const res = await post(hook.path, body, { 'X-Webhook-Signature': `sha256=${signWebhookBody(SECRET, body)}` });
    assert.equal(res.status, 202);
    const runId: string = res.json.run_id;

    const run = await runResult(runId);
    assert.equal(run.automation, 'schedule_call');
    assert.equal(run.call_id, hookRunCallId(runId));

    const call = await callRow(app.pool, run.call_id!);
    assert.equal(call.team_id, team.teamId);
    assert.equal(call.script_id, team.scriptId);
    assert.equal(call.from_number, team.fromNumber);
    assert.equal(call.to_number, phone);
    assert.equal(call.type, 'outbound');
    const contact = (await app.pool.query('SELECT * FROM contacts WHERE id = $1', [run.contact_id])).rows[0];
    assert.deepEqual(
      { phone: contact.phone_number, first: contact.first_name, last: contact.last_name, email: contact.email },
      { phone, first: 'Ada', last: 'Lovelace', email: 'ada@example.com' },
    );

    const outcome: CallWorkflowResult = await env.client.workflow.getHandle(callWorkflowId(run.call_id!)).result();
    assert.equal(outcome.status, 'completed');
    const status = await app.request('GET', `/api/v1/get-call-status/${run.call_id}`, { key: team.apiKey, headers: { 'X-Forwarded-For': '10.21.0.1' } });
    assert.equal(status.status, 200);
    assert.equal(status.json.call.status, 'completed');
    assert.equal(status.json.call.end_reason, 'agent_hangup');
  });

  test('20 concurrent deliveries with one X-Webhook-Id make exactly one run and one call', async () => {
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'schedule_call', script_id: team.scriptId, from_number: team.fromNumber } });
    const body = JSON.stringify({ phone: calleeNumber('5555'), first_name: 'Grace' });
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(hook.path, body, { 'X-Webhook-Id': 'evt-20x' })));
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([202]));
    const runIds = new Set(responses.map((r) => r.json.run_id));
    assert.equal(runIds.size, 1);
    const [runId] = runIds;
    const run = await runResult(runId);
    await env.client.workflow.getHandle(callWorkflowId(run.call_id!)).result();
    assert.equal(await count('SELECT count(*) AS n FROM calls WHERE contact_id = $1', [run.contact_id]), 1);
    // A late duplicate after the run finished still answers the same run and calls nobody.
    const late = await post(hook.path, body, { 'X-Webhook-Id': 'evt-20x' });
    assert.equal(late.json.run_id, runId);
    assert.equal(await count('SELECT count(*) AS n FROM calls WHERE contact_id = $1', [run.contact_id]), 1);
  });

  test('a body without a usable phone number ends the run failed with a readable reason, writing nothing', async () => {
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'schedule_call', script_id: team.scriptId, from_number: team.fromNumber } });
    const contactsBefore = await count('SELECT count(*) AS n FROM contacts WHERE team_id = $1', [team.teamId]);
    const callsBefore = await count('SELECT count(*) AS n FROM calls WHERE team_id = $1', [team.teamId]);
    const res = await post(hook.path, JSON.stringify({ first_name: 'Nobody', phone: 'unknown' }));
    assert.equal(res.status, 202);
    const failure = await runFailure(res.json.run_id);
    assert.equal(failure.type, 'UnmappableWebhookBody');
    assert.match(failure.message, /"unknown" is not a valid phone number/);
    assert.equal(await count('SELECT count(*) AS n FROM contacts WHERE team_id = $1', [team.teamId]), contactsBefore);
    assert.equal(await count('SELECT count(*) AS n FROM calls WHERE team_id = $1', [team.teamId]), callsBefore);
    // The worker is unharmed: the next run on the same hook goes through.
    const next = await post(hook.path, JSON.stringify({ phone: calleeNumber('7777') }));
    assert.ok((await runResult(next.json.run_id)).call_id);
  });
});

describe('add_to_list automation', () => {
  test('a request upserts the contact and adds it to the hook’s list once, however often it is sent', async () => {
    const list = await insertList(app.pool, team.teamId, 'webhook leads');
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'add_to_list', list_id: list.id } });
    const phone = calleeNumber('8888');
    const first = await runResult((await post(hook.path, JSON.stringify({ phone, first_name: 'Alan' }))).json.run_id);
    assert.equal(first.automation, 'add_to_list');
    assert.equal(first.contact_created, true);
    const second = await runResult((await post(hook.path, JSON.stringify({ phone, last_name: 'Turing' }))).json.run_id);
    assert.equal(second.contact_id, first.contact_id);
    assert.equal(second.contact_created, false);
    const members = await app.pool.query('SELECT contact_id FROM list_contacts WHERE list_id = $1', [list.id]);
    assert.deepEqual(members.rows, [{ contact_id: first.contact_id }]);
    const contact = (await app.pool.query('SELECT first_name, last_name FROM contacts WHERE id = $1', [first.contact_id])).rows[0];
    assert.deepEqual(contact, { first_name: 'Alan', last_name: 'Turing' });
  });

  test('a deleted list ends the run failed as HookListNotFound without creating the contact', async () => {
    const list = await insertList(app.pool, team.teamId, 'soon gone');
    const hook = await createHook(app.pool, { teamId: team.teamId, secret: null, automation: { kind: 'add_to_list', list_id: list.id } });
    await app.pool.query('UPDATE lists SET deleted_at = now() WHERE id = $1', [list.id]);
    const phone = calleeNumber('9999');
    const res = await post(hook.path, JSON.stringify({ phone }));
    const failure = await runFailure(res.json.run_id);
    assert.equal(failure.type, 'HookListNotFound');
    assert.equal(await count('SELECT count(*) AS n FROM contacts WHERE team_id = $1 AND phone_number = $2', [team.teamId, phone]), 0);
  });
});
