// The operator CLI's batches commands, run as an operator runs them, against a Temporal
// test server (real time here) with a batch worker in this process.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { Pool } from '../../src/db/pool.js';
import { createTestTeam, testPool, type TestTeam } from '../support/app.js';
import { batchTestConfig, createBatchWorker, listWithContacts } from '../support/batches.js';
import { operatorCli } from '../support/cli.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const config = batchTestConfig({ TEMPORAL_TASK_QUEUE: 'batches-cli' });

let env: TestWorkflowEnvironment;
let pool: Pool;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;

const { admin, adminJson, adminFails } = operatorCli(() => ({
  TEMPORAL_ADDRESS: env.address,
  TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
  BATCH_POLL_SECONDS: '0.5',
}));

before(async () => {
  env = await createTimeSkippingEnv();
  pool = await testPool();
  worker = await createBatchWorker(env, pool, config);
  running = worker.run();
  team = await createTestTeam(pool, { maxConcurrent: 5 });
});

after(async () => {
  worker?.shutdown();
  await running;
  await env?.teardown();
});

describe('batches commands', () => {
  test('batches create runs a batch to completed; batches show --json reports its progress by call status', async () => {
    const { listId } = await listWithContacts(pool, team.teamId, 3);
    const created = await adminJson(['batches', 'create', '--team', team.teamId, '--list', listId, '--script', team.scriptId, '--from', team.fromNumber]);
    assert.deepEqual(Object.keys(created).sort(), ['batch_id', 'from_number', 'list_id', 'script_id', 'start_at', 'status', 'workflow_id']);
    assert.equal(created.status, 'scheduled');
    assert.equal(created.workflow_id, `batch-${created.batch_id}`);

    let shown: any;
    const deadline = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 500));
      shown = await adminJson(['batches', 'show', created.batch_id]);
    } while (shown.status !== 'completed' && Date.now() < deadline);
    assert.equal(shown.status, 'completed');
    assert.equal(shown.end_reason, 'all_called');
    assert.deepEqual(shown.progress, { total: 3, pending: 0, calling: 0, in_progress: 0, skipped: 0, done: { completed: 3 }, done_total: 3 });
    assert.equal(shown.list_id, listId);
    assert.ok(shown.started_at && shown.ended_at);

    const listed = await adminJson(['batches', 'list', '--team', team.teamId]);
    assert.ok(listed.batches.some((b: any) => b.batch_id === created.batch_id && b.status === 'completed'));
  });

  test('a scheduled batch pauses, resumes to scheduled, cancels; a cancelled batch cannot be resumed', async () => {
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 2);
    const startAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await adminJson(['batches', 'create', '--team', team.teamId, '--list', listId, '--script', team.scriptId, '--from', team.fromNumber, '--start-at', startAt]);
    assert.equal(created.start_at, startAt);
    assert.deepEqual(await adminJson(['batches', 'pause', created.batch_id]), { batch_id: created.batch_id, status: 'paused' });
    assert.deepEqual(await adminJson(['batches', 'resume', created.batch_id]), { batch_id: created.batch_id, status: 'scheduled' });
    assert.deepEqual(await adminJson(['batches', 'cancel', created.batch_id]), { batch_id: created.batch_id, status: 'cancelled' });
    await adminFails(['batches', 'resume', created.batch_id], /Batch cannot be resumed: its status is cancelled/);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE team_id = $1 AND contact_id = ANY($2::uuid[])', [team.teamId, contactIds]);
    assert.equal(rows[0].n, 0, 'no call before the start time');
  });

  test('operator mistakes are named on stderr: unknown list, bad start time, unknown batch', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    await adminFails(['batches', 'create', '--team', team.teamId, '--list', missing, '--script', team.scriptId, '--from', team.fromNumber], /List not found/);
    await adminFails(['batches', 'create', '--team', team.teamId, '--list', missing, '--script', team.scriptId, '--from', team.fromNumber, '--start-at', 'tomorrow'], /--start-at must be an ISO 8601 date-time/);
    await adminFails(['batches', 'show', missing], /Batch not found/);
  });
});
