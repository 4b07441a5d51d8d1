// The batch workflow in the time-skipping environment: the real batch workflow and every
// real activity over the test database, with the lean stand-in call workflow of
// batchCallStandIn.ts (real slots under the team ceiling, real call rows). The real call
// workflow under a batch is covered by test/e2e/batches.test.ts; the 1,000-contact batch is in
// batchWorkflowScale.test.ts, so that lanes run it beside these.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Pool } from '../../src/db/pool.js';
import { batchCounts } from '../../src/db/repositories/batches.js';
import { removeContactsFromList, softDeleteList, addExistingContactsToList } from '../../src/db/repositories/lists.js';
import { upsertContactByPhone } from '../../src/db/repositories/contacts.js';
import { advanceBatch } from '../../src/services/batchEngine.js';
import { cancelBatch, createBatch, pauseBatch, resumeBatch, showBatch, type BatchServiceDeps } from '../../src/services/batches.js';
import { BATCH_ID, BATCH_STATUS } from '../../src/temporal/searchAttributes.js';
import { batchStateQuery, batchWorkflowId, type BatchWorkflowResult } from '../../workflows/contracts.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import {
  addContacts,
  assertEachCalledOnce,
  batchTestBundle,
  batchWorkflowEnv,
  calleeNumbers,
  callsPerContact,
  countCalls,
  listWithContacts,
  startBatch as startTeamBatch,
} from '../support/batches.js';
import { WORKFLOW_TEST } from '../support/temporal.js';

const { History } = proto.temporal.api.history.v1;
// Recorded histories (protobuf) of earlier runs of the batch workflow; the replay test at
// the end guards determinism. RECORD_BATCH_HISTORIES=1 re-records them from this run (only
// when the workflow changes on purpose in a way running batches cannot replay).
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'batchHistories');
const RECORD = process.env.RECORD_BATCH_HISTORIES === '1';

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: BatchServiceDeps;
// An hour's poll, not batchTestConfig's 2 s. Pause, cancel and added contacts wake the batch
// with a signal, whose workflow task cancels the poll timer. The time-skipping test server
// moves its clock in real time between skips; a timer that falls due while that task is
// with the worker is gone from the server when the cancel comes, and the server refuses the
// completion ("invalid history builder state for action") and never gives the workflow
// another task (temporalio/sdk-java#2606, #3088; the real server drops the buffered firing
// and records the cancel). With a 2 s poll a test's signal lost that race on a busy machine
// and the batch hung. An hour's timer cannot fall due within a test's real-time steps; the
// waits the tests skip through still see every poll.
const batches = batchWorkflowEnv((started) => ({ env, pool, deps } = started), { BATCH_POLL_SECONDS: '3600' });
const { config } = batches;
const startBatch = (team: TestTeam, listId: string, opts?: Parameters<typeof startTeamBatch>[3]) => startTeamBatch(deps, team, listId, opts);

const handle = (batchId: string) => env.client.workflow.getHandle(batchWorkflowId(batchId));
/** Awaiting the result lets the test server skip time until the batch ends. */
const finished = (batchId: string): Promise<BatchWorkflowResult> => handle(batchId).result();

/** Keeps the (last run's) history of a batch for the replay test, when recording. */
async function record(batchId: string, name: string): Promise<void> {
  if (!RECORD) return;
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const history = await handle(batchId).fetchHistory();
  writeFileSync(path.join(HISTORIES_DIR, `batch-${name}.bin`), History.encode(history).finish());
}

describe('batch workflow', () => {
  test('contacts added to the list mid-batch are called too, each once, also when added twice or concurrently', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 10);
    const batch = await startBatch(team, listId);
    await env.sleep(5_000);
    const [first, second] = await Promise.all([addContacts(deps, team.teamId, listId, 3), addContacts(deps, team.teamId, listId, 5)]);
    const later = [...first, ...second];
    // Adding members again, concurrently, makes no second call.
    await Promise.all([addExistingContactsToList(pool, team.teamId, listId, later), addExistingContactsToList(pool, team.teamId, listId, [...contactIds.slice(0, 3), ...later])]);
    const result = await finished(batch.id);

    assert.equal(result.status, 'completed');
    assert.deepEqual(result.progress.done, { completed: 18 });
    assert.equal(result.progress.total, 18);
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), [...contactIds, ...later]);
    await record(batch.id, 'added-mid-batch');
  });

  test('contacts added through the lists service reach a waiting batch at once, without waiting for its poll', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const { listId } = await listWithContacts(pool, team.teamId, 1);
    // A poll of an hour: only the wake-up signal can make the batch look before then.
    const batch = await startBatch(team, listId, { workflow: { pollMs: 3_600_000 } });
    const handedOut = async () => {
      const { progress } = await showBatch(deps, batch.id);
      return progress.total - progress.pending;
    };
    await waitUntil(async () => (await handedOut()) === 1);
    const added = await addContacts(deps, team.teamId, listId, 2);
    // Real time, no time skipping: the batch's hour-long timer cannot have fired.
    await waitUntil(async () => (await handedOut()) === 3, 10_000);
    const perContact = await callsPerContact(pool, team.teamId);
    for (const id of added) assert.equal(perContact.get(id), 1);
    await cancelBatch(deps, batch.id);
    await finished(batch.id);
  });

  test('members added behind the lists service (no signal) are picked up by the periodic sweep', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 3 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 4);
    const batch = await startBatch(team, listId);
    await env.sleep(3_000);
    const quiet: string[] = [];
    for (const phone of calleeNumbers(3)) quiet.push((await upsertContactByPhone(pool, team.teamId, { phone_number: phone })).contact.id);
    await addExistingContactsToList(pool, team.teamId, listId, quiet);
    const result = await finished(batch.id);
    assert.equal(result.status, 'completed');
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), [...contactIds, ...quiet]);
  });

  test('contacts removed from the list before their call are skipped; a skipped contact added again is called', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 12);
    const removed = contactIds.slice(0, 6);
    const batch = await startBatch(team, listId, { startAt: new Date((await env.currentTimeMs()) + 60_000) });
    // Taken in while scheduled, removed before the start, one of them back after being skipped.
    await waitUntil(async () => (await showBatch(deps, batch.id)).progress.pending === 12);
    await removeContactsFromList(pool, team.teamId, listId, removed);
    await env.sleep(61_000);
    await waitUntil(async () => (await showBatch(deps, batch.id)).progress.skipped === 6);
    await addExistingContactsToList(pool, team.teamId, listId, [removed[0]]);
    const result = await finished(batch.id);

    assert.equal(result.status, 'completed');
    assert.equal(result.progress.skipped, 5);
    assert.deepEqual(result.progress.done, { completed: 7 });
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), [...contactIds.slice(6), removed[0]]);
    const reasons = await pool.query('SELECT DISTINCT skip_reason FROM batch_contacts WHERE batch_id = $1 AND state = $2', [batch.id, 'skipped']);
    assert.deepEqual(reasons.rows, [{ skip_reason: 'removed_from_list' }]);
  });

  test('a batch with a start time makes no call before it', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const { listId } = await listWithContacts(pool, team.teamId, 3);
    // Workflow time: the test server's clock runs ahead of the wall clock once time was skipped.
    const startAt = new Date((await env.currentTimeMs()) + 3_600_000);
    const batch = await startBatch(team, listId, { startAt });
    await env.sleep(1_800_000);
    assert.equal(await countCalls(pool, team.teamId), 0);
    const state = await handle(batch.id).query(batchStateQuery);
    assert.equal(state.status, 'scheduled');
    assert.equal(state.progress.pending, 3);
    const result = await finished(batch.id);
    assert.equal(result.status, 'completed');
    const { rows } = await pool.query('SELECT min(actual_time) AS first FROM calls WHERE team_id = $1', [team.teamId]);
    assert.ok(rows[0].first.getTime() >= startAt.getTime(), 'the first call started at or after start_at');
    await record(batch.id, 'start-time');
  });

  test('pause stops new calls; resume carries on and still calls everyone once', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 20);
    const batch = await startBatch(team, listId);
    await env.sleep(3_000);
    assert.equal((await pauseBatch(deps, batch.id)).status, 'paused');
    await env.sleep(10_000);
    const atPause = await countCalls(pool, team.teamId);
    assert.ok(atPause > 0 && atPause < 20, `some calls before the pause (${atPause})`);
    await env.sleep(120_000);
    assert.equal(await countCalls(pool, team.teamId), atPause, 'no call was made while paused');
    const paused = await showBatch(deps, batch.id);
    assert.equal(paused.batch.status, 'paused');
    assert.equal(paused.progress.calling, 0, 'calls handed out before the pause ended');
    assert.equal(paused.progress.pending, 20 - atPause);
    assert.equal((await handle(batch.id).describe()).typedSearchAttributes.get(BATCH_STATUS), 'paused');
    await assert.rejects(pauseBatch(deps, '00000000-0000-4000-8000-000000000000'), /Batch not found/);

    assert.equal((await resumeBatch(deps, batch.id)).status, 'running');
    const result = await finished(batch.id);
    assert.equal(result.status, 'completed');
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), contactIds);
    await record(batch.id, 'paused-resumed');
  });

  test('cancel ends the batch: waiting calls are cancelled, no new call goes out', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const { listId } = await listWithContacts(pool, team.teamId, 30);
    const batch = await startBatch(team, listId);
    await env.sleep(3_000);
    const cancelled = await cancelBatch(deps, batch.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.end_reason, 'cancelled');
    const result = await finished(batch.id);
    assert.equal(result.status, 'cancelled');
    const made = await countCalls(pool, team.teamId);
    assert.ok(made < 30, `only the calls handed out before the cancel (${made})`);
    await env.sleep(60_000);
    assert.equal(await countCalls(pool, team.teamId), made);
    const view = await showBatch(deps, batch.id);
    assert.equal(view.progress.calling, 0);
    assert.equal(view.progress.pending, 30 - made);
    assert.equal(view.progress.done_total, made);
    await assert.rejects(resumeBatch(deps, batch.id), /Batch cannot be resumed: its status is cancelled/);
    assert.equal((await cancelBatch(deps, batch.id)).status, 'cancelled', 'cancelling again answers the cancelled batch');
    await record(batch.id, 'cancelled');
  });

  test('deleting the list ends the batch as cancelled (list_deleted)', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const { listId } = await listWithContacts(pool, team.teamId, 20);
    const batch = await startBatch(team, listId);
    await env.sleep(3_000);
    await softDeleteList(pool, team.teamId, listId);
    const result = await finished(batch.id);
    assert.equal(result.status, 'cancelled');
    assert.equal(result.endReason, 'list_deleted');
    assert.ok((await countCalls(pool, team.teamId)) < 20);
  });

  test('a batch continues as new many times and still calls everyone exactly once', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 3 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 40);
    const batch = await startBatch(team, listId, { workflow: { maxTicksPerRun: 3, maxCallsPerRun: 5 } });
    const result = await finished(batch.id);
    assert.equal(result.status, 'completed');
    assert.equal(result.progress.done_total, 40);
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), contactIds);
    const state = await handle(batch.id).query(batchStateQuery);
    assert.ok(state.run >= 5, `several runs (${state.run})`);
    const description = await handle(batch.id).describe();
    assert.equal(description.typedSearchAttributes.get(BATCH_ID), batch.id, 'search attributes survive continue-as-new');
    // The last run holds its own few ticks, not the batch's whole past.
    const history = await handle(batch.id).fetchHistory();
    assert.ok((history.events?.length ?? 0) < 80, `a short history (${history.events?.length} events)`);
    await record(batch.id, 'continued-as-new');
  });

  test('a worker restart mid-batch loses nothing and calls no one twice', WORKFLOW_TEST, async () => {
    // The batch starts on a worker without a workflow cache (see createBatchWorker) ...
    await batches.stopWorker();
    await batches.startWorker({ maxCachedWorkflows: 0 });
    const team = await createTestTeam(pool, { maxConcurrent: 3 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 30);
    const batch = await startBatch(team, listId);
    await env.sleep(4_000);
    // ... which stops mid-batch, calls in progress; another worker takes over.
    await batches.stopWorker();
    const before = await countCalls(pool, team.teamId);
    assert.ok(before > 0 && before < 30, `stopped mid-batch (${before} calls made)`);
    await batches.startWorker();
    const result = await finished(batch.id);
    assert.equal(result.status, 'completed');
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), contactIds);
  });

  test('ticks running at the same time (a retried activity beside a lost one) never call a contact twice and keep the counters exact', WORKFLOW_TEST, async () => {
    // A task queue no worker polls: the batch is driven by hand and its calls stay scheduled until ended here.
    const idle: BatchServiceDeps = { ...deps, config: { ...config, TEMPORAL_TASK_QUEUE: 'batches-idle' } };
    const team = await createTestTeam(pool, { maxConcurrent: 4 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 40);
    const batch = await createBatch(idle, { teamId: team.teamId, listId, scriptId: team.scriptId, fromNumber: team.fromNumber });
    let status = 'scheduled';
    for (let round = 0; round < 40 && status !== 'completed'; round += 1) {
      const ticks = await Promise.all(Array.from({ length: 6 }, () => advanceBatch(idle, batch.id, { start: true })));
      status = ticks[ticks.length - 1].status;
      if (round === 2) await addContacts(deps, team.teamId, listId, 5);
      await pool.query(`UPDATE calls SET status = 'completed', end_time = now() WHERE team_id = $1 AND status = 'scheduled'`, [team.teamId]);
    }
    assert.equal(status, 'completed');
    const perContact = await callsPerContact(pool, team.teamId);
    assert.equal(perContact.size, 45);
    for (const id of contactIds) assert.equal(perContact.get(id), 1);
    const rows = await pool.query<{ bucket: string; n: number }>(
      `SELECT CASE WHEN state = 'done' THEN 'done:' || call_status ELSE state END AS bucket, count(*)::int AS n FROM batch_contacts WHERE batch_id = $1 GROUP BY 1`,
      [batch.id],
    );
    const { attempts, ...counters } = Object.fromEntries(Object.entries(await batchCounts(pool, batch.id)).filter(([, n]) => n !== 0));
    assert.deepEqual(counters, Object.fromEntries(rows.rows.map((r) => [r.bucket, r.n])));
    assert.deepEqual(counters, { 'done:completed': 45 });
    assert.equal(attempts, 45, 'one call per contact, counted once');
    await handle(batch.id).terminate('driven by hand in this test');
  });

  test('recorded histories of earlier batches replay without nondeterminism', WORKFLOW_TEST, async () => {
    const files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.bin'));
    assert.ok(files.length >= 5, `recorded histories in ${HISTORIES_DIR}`);
    for (const file of files) {
      const history = History.decode(readFileSync(path.join(HISTORIES_DIR, file)));
      await Worker.runReplayHistory({ workflowBundle: await batchTestBundle() }, history, file);
    }
  });
});

/** Polls (real time) until `check` holds. */
async function waitUntil(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
