// A batch end to end in the time-skipping environment: the list built and grown through the
// real API, the batch workflow, the real call workflow (script runtime, simulator, analysis)
// and every real activity over the test database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createBatch, showBatch, type BatchServiceDeps } from '../../src/services/batches.js';
import { batchWorkflowId, type BatchWorkflowResult } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { calleeNumbers } from '../support/batches.js';
import { callTestConfig, createCallWorker } from '../support/calls.js';
import { createTimeSkippingEnv, WORKFLOW_TEST } from '../support/temporal.js';

const TASK_QUEUE = 'batches-e2e';

let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;
let deps: BatchServiceDeps;

before(async () => {
  env = await createTimeSkippingEnv();
  const overrides = { TEMPORAL_TASK_QUEUE: TASK_QUEUE, RATE_LIMITS_ENABLED: 'false' } as const;
  app = await startTestApi({ temporal: env.client, config: overrides });
  // An hour's poll: contacts added through the API wake the batch with a signal, whose task
  // cancels the poll timer, and a 2 s poll could fall due meanwhile on the test server, which
  // then strands the batch (test/workflows/batchWorkflow.test.ts says how).
  const config = callTestConfig({ ...overrides, SIMULATOR_CALL_SECONDS: '1', BATCH_POLL_SECONDS: '3600' });
  worker = await createCallWorker(env, app.pool, config);
  running = worker.run();
  team = await createTestTeam(app.pool, { maxConcurrent: 2 });
  deps = { pool: app.pool, temporal: env.client, config };
});

after(async () => {
  worker?.shutdown();
  await running;
  await app?.close();
  await env?.teardown();
});

async function addThroughApi(listId: string, numbers: string[]): Promise<string[]> {
  const res = await app.request('POST', `/api/v1/lists/${listId}/contacts`, {
    key: team.apiKey,
    body: { contacts: numbers.map((phone_number, i) => ({ phone_number, first_name: `Caller${i}` })) },
  });
  assert.equal(res.status, 201, res.text);
  return res.json.list_contacts.map((c: { id: string }) => c.id);
}

describe('batch end to end', () => {
  test('a batch calls each contact of an API-built list once through the real call path, picks up contacts added through the API mid-batch, and counts outcomes by call status', WORKFLOW_TEST, async () => {
    const created = await app.request('POST', '/api/v1/lists', { key: team.apiKey, body: { name: 'spring campaign' } });
    assert.equal(created.status, 201, created.text);
    const listId: string = created.json.list_id;
    const first = await addThroughApi(listId, [...calleeNumbers(4), ...calleeNumbers(1, '0002'), ...calleeNumbers(1, '0001')]);

    const batch = await createBatch(deps, { teamId: team.teamId, listId, scriptId: team.scriptId, fromNumber: team.fromNumber });
    await env.sleep(2_000);
    const later = await addThroughApi(listId, [...calleeNumbers(1), ...calleeNumbers(1, '0003')]);
    const result: BatchWorkflowResult = await env.client.workflow.getHandle(batchWorkflowId(batch.id)).result();

    assert.equal(result.status, 'completed');
    assert.deepEqual(result.progress.done, { completed: 5, voicemail: 1, 'rang-out': 1, 'User rejected': 1 });
    assert.equal(result.progress.done_total, 8);

    const listed = await app.request('GET', '/api/v1/calls?limit=50', { key: team.apiKey });
    assert.equal(listed.status, 200);
    const calls: { contact_id: string; call_id?: string; id?: string; status: string }[] = listed.json.calls;
    assert.equal(calls.length, 8);
    assert.deepEqual(calls.map((c) => c.contact_id).sort(), [...first, ...later].sort(), 'one call per contact');

    const view = await showBatch(deps, batch.id);
    assert.equal(view.batch.status, 'completed');
    assert.equal(view.batch.end_reason, 'all_called');
    assert.deepEqual(view.progress, result.progress);
  });
});
