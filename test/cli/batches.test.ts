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
}), { inProcess: true });

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

/** `batches show --json` of the batch, asked every 500 ms until it says completed (within a minute). */
async function shownOnceCompleted(batchId: string): Promise<any> {
  const deadline = Date.now() + 60_000;
  let shown: any;
  do {
    await new Promise((r) => setTimeout(r, 500));
    shown = await adminJson(['batches', 'show', batchId]);
  } while (shown.status !== 'completed' && Date.now() < deadline);
  assert.equal(shown.status, 'completed');
  return shown;
}

describe('batches commands', () => {
  test('batches create runs a batch to completed; batches show --json reports its progress by call status', async () => {
    const { listId } = await listWithContacts(pool, team.teamId, 3);
    const created = await adminJson(['batches', 'create', '--team', team.teamId, '--list', listId, '--script', team.scriptId, '--from', team.fromNumber]);
    assert.deepEqual(Object.keys(created).sort(), ['batch_id', 'calling_window', 'calling_window_set', 'from_number', 'list_id', 'retry_policy', 'script_id', 'start_at', 'status', 'workflow_id']);
    assert.equal(created.status, 'scheduled');
    assert.equal(created.workflow_id, `batch-${created.batch_id}`);

    const shown = await shownOnceCompleted(created.batch_id);
    assert.equal(shown.end_reason, 'all_called');
    assert.deepEqual(shown.progress, { total: 3, pending: 0, calling: 0, in_progress: 0, skipped: 0, skipped_dnc: 0, done: { completed: 3 }, done_total: 3, attempts: 3 });
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

  test('a batch with its own window and retry policy skips contacts on the do-not-call list and counts them', async () => {
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 3);
    const { rows } = await pool.query('SELECT phone_number FROM contacts WHERE id = $1', [contactIds[1]]);
    await pool.query(`INSERT INTO do_not_call (team_id, phone_number, source) VALUES ($1, $2, 'api')`, [team.teamId, rows[0].phone_number]);
    const created = await adminJson([
      'batches', 'create', '--team', team.teamId, '--list', listId, '--script', team.scriptId, '--from', team.fromNumber,
      '--window-days', 'daily', '--window-start', '00:00', '--window-end', '24:00',
      '--retry-policy', '{"voicemail":{"max_attempts":2,"delay_seconds":600}}',
    ]);
    assert.deepEqual(created.calling_window, { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '00:00', end: '24:00' });
    assert.equal(created.calling_window_set, true);
    assert.deepEqual(created.retry_policy, { voicemail: { max_attempts: 2, delay_seconds: 600 } });
    const shown = await shownOnceCompleted(created.batch_id);
    assert.equal(shown.progress.skipped, 1);
    assert.equal(shown.progress.skipped_dnc, 1);
    assert.equal(shown.progress.done_total, 2);
    assert.equal(shown.progress.attempts, 2);
    const skipped = await pool.query('SELECT skip_reason FROM batch_contacts WHERE batch_id = $1 AND contact_id = $2', [created.batch_id, contactIds[1]]);
    assert.equal(skipped.rows[0].skip_reason, 'do_not_call');
    const text = await admin(['batches', 'show', created.batch_id]);
    assert.match(text.stdout, /1 skipped \(1 on the do-not-call list\); 2 calls made/);
    const none = await adminJson(['batches', 'create', '--team', team.teamId, '--list', listId, '--script', team.scriptId, '--from', team.fromNumber, '--no-window', '--start-at', new Date(Date.now() + 86_400_000).toISOString()]);
    assert.equal(none.calling_window, null);
    assert.equal(none.calling_window_set, true);
    await adminJson(['batches', 'cancel', none.batch_id]);
  });

  test('operator mistakes are named on stderr: unknown list, bad start time, unknown batch', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    await adminFails(['batches', 'create', '--team', team.teamId, '--list', missing, '--script', team.scriptId, '--from', team.fromNumber], /List not found/);
    await adminFails(['batches', 'create', '--team', team.teamId, '--list', missing, '--script', team.scriptId, '--from', team.fromNumber, '--start-at', 'tomorrow'], /--start-at must be an ISO 8601 date-time/);
    await adminFails(['batches', 'show', missing], /Batch not found/);
    const base = ['batches', 'create', '--team', team.teamId, '--list', missing, '--script', team.scriptId, '--from', team.fromNumber];
    await adminFails([...base, '--window-days', 'mon-fri', '--window-start', '09:00'], /--window-days, --window-start and --window-end go together/);
    await adminFails([...base, '--no-window', '--window-days', 'mon', '--window-start', '09:00', '--window-end', '17:00'], /--no-window and --window-days\/--window-start\/--window-end exclude each other/);
    await adminFails([...base, '--retry-policy', '{"rang-out":{"max_attempts":3,"delay_seconds":10}}'], /rang-out.delay_seconds must be a whole number from 60 to 604800/);
  });
});
