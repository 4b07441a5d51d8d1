// The call workflow's life in the time-skipping environment (real activities over the test
// database, the simulator as voice provider): scheduling, cancel and retry, the concurrency
// ceiling, the history's shape, web calls, crashes and replay of recorded histories. The
// tests that time calls in real time are in callWorkflow.test.ts, which runs in the foreground (beside the lanes, first on the CPU); these
// assert on the workflow's clock and share the machine.
//
// Time is driven explicitly: results are awaited through a plain client (which leaves time
// skipping locked, so calls run in real time and can be looked at mid-way), and long waits
// (hours until a scheduled time, the two-minute web connection timeout) are skipped with
// env.sleep(). Automatic skipping is avoided on purpose: with several workflows and
// activities in flight it fires timers (activity timeouts among them) out of turn.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import proto from '@temporalio/proto';
import { Worker as ReplayWorker } from '@temporalio/worker';
import { workflowBundle } from '../../src/temporal/worker.js';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { getOrCreateSharedWebContact } from '../../src/db/repositories/contacts.js';
import { countedSlots, countLiveSlots, grantFreeSlots } from '../../src/db/repositories/concurrencySlots.js';
import { cancelCall, reconcileCalls, retryCall, scheduleCall, type CallServiceDeps } from '../../src/services/calls.js';
import { createWebSession } from '../../src/services/webSessions.js';
import { callEventSignal, callWorkflowId, type CallAdmission } from '../../workflows/contracts.js';
import { createTestTeam, httpStatus, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, calleeNumber, historySteps, localActivityResults, waitForCall } from '../support/calls.js';
import { callWorkflowEnv, scheduleSimulatedCall } from '../support/callWorkflowEnv.js';
import { WORKFLOW_TEST } from '../support/temporal.js';

const { History } = proto.temporal.api.history.v1;
// Recorded histories (protobuf) of call runs; the replay test at the end guards determinism.
// RECORD_CALL_HISTORIES=1 re-records them from this run (only when the workflow changes on
// purpose in a way that old runs cannot replay).
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'callHistories');
// RECORD_CALL_HISTORIES=1 records every one; a comma-separated list of names records those.
const RECORD = process.env.RECORD_CALL_HISTORIES ?? '';

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: CallServiceDeps;
let plain: Client;
const calls = callWorkflowEnv(callTestConfig(), (started) => ({ env, pool, deps, plain } = started));
const schedule = (team: TestTeam, lastFour: string, extra: { scheduledTime?: Date; serviceDeps?: CallServiceDeps; phone?: string } = {}) =>
  scheduleSimulatedCall(extra.serviceDeps ?? deps, team, lastFour, extra);
/** A call that has not ended within a minute fails the test with its row and last workflow events. */
const result = (callId: string) => calls.result(callId, 60_000);
const { steps } = calls;

/** With RECORD_CALL_HISTORIES=1: keeps the closed call's history for the replay test. */
async function record(callId: string, name: string): Promise<void> {
  if (RECORD !== '1' && !RECORD.split(',').includes(name)) return;
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
  writeFileSync(path.join(HISTORIES_DIR, `call-${name}.bin`), History.encode(history).finish());
}

describe('call workflow: scheduling, cancel and retry', () => {
  test('a call scheduled hours ahead waits in scheduled and starts on time', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const at = new Date(Date.now() + 5 * 3600_000);
    const call = await schedule(team, '2222', { scheduledTime: at });
    const waiting = await callRow(pool, call.callId);
    assert.equal(waiting.status, 'scheduled');
    assert.equal(waiting.progress, 'waiting_for_scheduled_time');
    const startedAt = (await env.client.workflow.getHandle(callWorkflowId(call.callId)).describe()).startTime;
    await env.sleep(4 * 3600_000);
    assert.equal((await callRow(pool, call.callId)).status, 'scheduled', 'still waiting an hour before its time');
    await env.sleep(3600_000);
    assert.equal((await result(call.callId)).status, 'completed');
    const row = await callRow(pool, call.callId);
    // In the workflow's clock (the test server's), the call started five hours after its workflow.
    const waited = row.actual_time!.getTime() - startedAt.getTime();
    assert.ok(waited >= 5 * 3600_000 - 5_000 && waited < 5 * 3600_000 + 60_000, `started ${waited} ms after scheduling`);
  });

  test('cancel before the start ends the call cancelled; cancelling again or after the start answers 409', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const call = await schedule(team, '3333', { scheduledTime: new Date(Date.now() + 3600_000) });
    const cancelled = await cancelCall(deps, team.teamId, call.callId);
    assert.equal(cancelled.status, 'cancelled');
    assert.deepEqual(await result(call.callId), { callId: call.callId, status: 'cancelled', endReason: 'cancelled' });
    await record(call.callId, 'cancelled-before-start');
    const row = await callRow(pool, call.callId);
    assert.equal(row.actual_time, null);
    assert.equal(row.analysed_at, null);
    await assert.rejects(cancelCall(deps, team.teamId, call.callId), (err: any) => httpStatus(err) === 409 && /cancelled/.test(err.message));

    const live = await schedule(team, '3334');
    await waitForCall(pool, live.callId, (c) => c.status === 'in-progress');
    await assert.rejects(cancelCall(deps, team.teamId, live.callId), (err: any) => httpStatus(err) === 409 && err.message === 'Call cannot be cancelled: its status is in-progress');
    assert.equal((await result(live.callId)).status, 'completed');
  });

  test('retry creates a new call with original_call_id through the same path; completed calls answer 409', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const phone = calleeNumber('0001');
    const first = await schedule(team, '0001', { phone });
    assert.equal((await result(first.callId)).status, 'rang-out');
    await record(first.callId, 'rang-out');
    const retried = await retryCall(deps, team.teamId, first.callId);
    assert.notEqual(retried.callId, first.callId);
    assert.equal(retried.status, 'scheduled');
    assert.equal(retried.call.original_call_id, first.callId);
    assert.equal(retried.contactId, first.contactId);
    assert.equal((await result(retried.callId)).status, 'rang-out');

    const done = await schedule(team, '5555');
    assert.equal((await result(done.callId)).status, 'completed');
    await assert.rejects(retryCall(deps, team.teamId, done.callId), (err: any) => httpStatus(err) === 409 && /completed/.test(err.message));
  });
});

describe('call workflow: the concurrency ceiling', () => {
  test('ceiling 2, five calls: at most two in progress at any moment, all five finish, first come first served', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const at = new Date(Date.now() - 1000); // all five due at once: first come (created) first served
    const calls = [];
    for (let i = 0; i < 5; i++) calls.push(await schedule(team, `60${10 + i}`, { scheduledTime: at }));
    const outcomes = await Promise.all(calls.map((c) => result(c.callId)));
    assert.deepEqual(outcomes.map((o) => o.status), Array(5).fill('completed'));
    const rows = await Promise.all(calls.map((c) => callRow(pool, c.callId)));
    // At most two overlapping [actual_time, end_time) intervals at any instant.
    const edges = rows.flatMap((r) => [
      { t: r.actual_time!.getTime(), d: 1 },
      { t: r.end_time!.getTime(), d: -1 },
    ]);
    edges.sort((a, b) => a.t - b.t || a.d - b.d);
    let inProgress = 0;
    let peak = 0;
    for (const e of edges) peak = Math.max(peak, (inProgress += e.d));
    assert.equal(peak, 2, 'two at a time, never more');
    // Slots are granted in order; two calls granted at one instant may reach in-progress a few ms apart.
    const starts = rows.map((r) => r.actual_time!.getTime());
    for (let i = 0; i < starts.length; i++) {
      for (let j = i + 1; j < starts.length; j++) assert.ok(starts[i] <= starts[j] + 250, `call ${i} started before call ${j}: ${starts}`);
    }
    assert.ok(Math.max(starts[0], starts[1]) < Math.min(starts[2], starts[3], starts[4]), 'the first two went first');
    assert.ok(rows[2].actual_time! >= rows[0].end_time! || rows[2].actual_time! >= rows[1].end_time!, 'the third waited for a slot');
    assert.equal(await countLiveSlots(pool, team.teamId), 0);
    assert.equal(await countedSlots(pool, team.teamId), 0, 'the team counts no slot either');
    // Each freed slot went to exactly the next call: one wake-up per call that waited, none to the others.
    const granted = await Promise.all(calls.map(async (c) => (await steps(c.callId)).filter((s) => s === 'signal slotGranted').length));
    assert.deepEqual(granted.slice(0, 2), [0, 0], 'the first two never waited');
    for (const n of granted.slice(2)) assert.ok(n <= 1, `one wake-up at most: ${granted}`);
    assert.ok(granted.slice(2).filter((n) => n === 1).length >= 2, `the calls that waited were woken by their grant: ${granted}`);
    // call-waited-for-a-slot.bin is the same call recorded before ADMIT_CALL_PATCH.
    await record(calls[4].callId, 'admitted-waited-for-a-slot');
  });

  test('a wake-up that never arrived is sent again by the reconciler: the waiting call starts long before its own re-check', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const first = await schedule(team, '1235');
    await waitForCall(pool, first.callId, (c) => c.status === 'in-progress');
    const second = await schedule(team, '1236');
    await waitForCall(pool, second.callId, (c) => c.progress === 'waiting_for_slot');
    // A second slot, granted in the database without the signal (as if the worker died between the two).
    await pool.query('UPDATE teams SET max_concurrent = 2 WHERE id = $1', [team.teamId]);
    assert.deepEqual(await grantFreeSlots(pool, team.teamId), [second.callId]);
    const report = await reconcileCalls(deps, { startAfterMs: 3600_000, staleAfterMs: 3600_000, rewakeAfterMs: 0 });
    assert.ok(report.slots.rewoken >= 1, JSON.stringify(report));
    assert.equal((await result(second.callId)).status, 'completed');
    assert.equal((await result(first.callId)).status, 'completed');
    assert.equal(await countLiveSlots(pool, team.teamId), 0);
  });
});

describe('call workflow: history', () => {
  test('a completed simulated call: one local-activity marker per row write, one memo per script step, under fifty events', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const call = await schedule(team, '8642');
    assert.equal((await result(call.callId)).status, 'completed');
    // call-completed-script.bin is the same call recorded before ADMIT_CALL_PATCH.
    await record(call.callId, 'admitted-completed-script');
    const history = await plain.workflow.getHandle(callWorkflowId(call.callId)).fetchHistory();
    const events = history.events ?? [];
    assert.deepEqual(
      historySteps(history).filter((s) => !s.startsWith('timer')),
      ['admitCall', 'placeCall', 'recordConversation', 'completeCall', 'analyseCall'],
    );
    const [admission] = localActivityResults(history, 'admitCall') as CallAdmission[];
    assert.equal(admission.outcome, 'started', 'slot, do-not-call list and dial token passed in one step');
    assert.ok(admission.outcome === 'started' && admission.dialTokenAt && !admission.waitForDialToken, JSON.stringify(admission));
    assert.equal(events.filter((e) => e.workflowPropertiesModifiedEventAttributes).length, 7, 'each script step shows in the history');
    assert.equal(events.filter((e) => e.activityTaskScheduledEventAttributes).length, 0, 'no activity task: every row write is local');
    assert.ok(events.length <= 50, `${events.length} events`);
    const row = await callRow(pool, call.callId);
    assert.equal(row.conversation.length, 7, 'every turn of the script, written once');
    assert.deepEqual(row.system_notes.map((n) => n.kind), ['auth_check', 'script_result']);
  });
});

describe('call workflow: provider events and web calls', () => {
  test('a web call connects on `answered`, follows transcript events and ends with the reported reason', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const contact = await getOrCreateSharedWebContact(pool, team.teamId);
    const call = await scheduleCall(deps, { teamId: team.teamId, scriptId: team.scriptId, contact: { id: contact.id }, type: 'web' });
    const handle = env.client.workflow.getHandle(callWorkflowId(call.callId));
    assert.equal((await callRow(pool, call.callId)).progress, 'waiting_for_connection');
    await handle.signal(callEventSignal, { type: 'answered', event_id: 'e1' });
    await waitForCall(pool, call.callId, (c) => c.status === 'in-progress');
    await handle.signal(callEventSignal, { type: 'transcript', role: 'agent', text: 'Hello there.', event_id: 'e2' });
    await handle.signal(callEventSignal, { type: 'transcript', role: 'agent', text: 'Hello there.', event_id: 'e2' });
    await handle.signal(callEventSignal, { type: 'transcript', role: 'user', text: 'Hi!', event_id: 'e3' });
    await handle.signal(callEventSignal, { type: 'ended', reason: 'User Hangup', event_id: 'e4' });
    assert.deepEqual(await result(call.callId), { callId: call.callId, status: 'hang-up', endReason: 'User Hangup' });
    const row = await callRow(pool, call.callId);
    assert.equal(row.transcript, 'Agent: Hello there.\nUser: Hi!', 'a redelivered event_id is applied once');
    await record(call.callId, 'web-events-hang-up');
  });

  test('a web call nobody connects to within two minutes ends failed / not_connected', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const contact = await getOrCreateSharedWebContact(pool, team.teamId);
    const call = await scheduleCall(deps, { teamId: team.teamId, scriptId: team.scriptId, contact: { id: contact.id }, type: 'web' });
    await env.sleep(110_000);
    assert.equal((await callRow(pool, call.callId)).status, 'scheduled', 'still waiting before two minutes');
    await env.sleep(10_000);
    assert.deepEqual(await result(call.callId), { callId: call.callId, status: 'failed', endReason: 'not_connected' });
    await record(call.callId, 'web-not-connected');
    const row = await callRow(pool, call.callId);
    assert.equal(row.actual_time, null);
    assert.equal(row.duration, 0);
  });
});

describe('call workflow: crashes', () => {
  test('the API dying between the row and the workflow start: the reconciler starts the call', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const brokenTemporal = {
      workflow: {
        start: async () => {
          throw new Error('connection lost');
        },
      },
    } as unknown as Client;
    const call = await schedule(team, '9999', { serviceDeps: { ...deps, temporal: brokenTemporal } });
    const row = await callRow(pool, call.callId);
    assert.equal(row.status, 'scheduled');
    assert.equal(row.workflow_started_at, null, 'no workflow behind the row yet');
    const report = await reconcileCalls(deps, { startAfterMs: 0, staleAfterMs: 3600_000 });
    assert.ok(report.started >= 1);
    assert.ok((await callRow(pool, call.callId)).workflow_started_at);
    assert.equal((await result(call.callId)).status, 'completed');
    const startedAt = (await callRow(pool, call.callId)).workflow_started_at;
    await reconcileCalls(deps, { startAfterMs: 0, staleAfterMs: 3600_000 });
    const after = await callRow(pool, call.callId);
    assert.equal(after.status, 'completed');
    assert.deepEqual(after.workflow_started_at, startedAt, 'a second pass leaves a started call alone');
  });

  test('the API dying between a web session row and its workflow: the reconciler expires the session once past its expiry (as its workflow would: expireWebSession) and frees its slot', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const sessionId = randomUUID();
    // A Temporal that never answers: the session is stored and its slot taken, as by an API killed before the start.
    const silentTemporal = { workflow: { start: () => new Promise(() => {}) } } as unknown as Client;
    const config = callTestConfig({ MEDIA_EDGE_WS_URL: 'ws://127.0.0.1:9/ws', MEDIA_EDGE_SIP_DOMAIN: 'edge.test' });
    void createWebSession({ ...deps, config, temporal: silentTemporal }, { teamId: team.teamId, scriptId: team.scriptId, sessionId });
    for (let i = 0; i < 200 && (await pool.query('SELECT 1 FROM web_sessions WHERE id = $1', [sessionId])).rowCount === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const live = await countLiveSlots(pool, team.teamId);
    assert.equal(live, 1, 'the session holds its slot');
    const fresh = await reconcileCalls(deps, { startAfterMs: 3600_000, staleAfterMs: 3600_000 });
    assert.equal((await pool.query<{ status: string }>('SELECT status FROM web_sessions WHERE id = $1', [sessionId])).rows[0].status, 'minted', 'not before its expiry');
    assert.equal(fresh.webSessionsExpired, 0);
    await pool.query("UPDATE web_sessions SET expires_at = now() - interval '2 minutes' WHERE id = $1", [sessionId]);
    const report = await reconcileCalls(deps, { startAfterMs: 3600_000, staleAfterMs: 3600_000 });
    assert.ok(report.webSessionsExpired >= 1, JSON.stringify(report));
    const row = (await pool.query<{ status: string; expired_at: Date | null }>('SELECT status, expired_at FROM web_sessions WHERE id = $1', [sessionId])).rows[0];
    assert.equal(row.status, 'expired');
    assert.ok(row.expired_at);
    assert.equal(await countLiveSlots(pool, team.teamId), 0, 'its slot is free');
  });

  test('an open call whose workflow is gone is ended failed / workflow_lost and frees its slot', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const call = await schedule(team, '1111', { scheduledTime: new Date(Date.now() - 60_000) });
    await waitForCall(pool, call.callId, (c) => c.status === 'in-progress');
    await env.client.workflow.getHandle(callWorkflowId(call.callId)).terminate('operator test');
    assert.equal(await countLiveSlots(pool, team.teamId), 1, 'the slot is held while the row is open');
    // The terminated run's call activity may still write the row (touching modified_at) until
    // its next heartbeat tells it the run is gone; the reconciler runs periodically, so pass
    // after pass the row goes stale and is ended. Each pass here ages the row first.
    let failed = 0;
    let row = await callRow(pool, call.callId);
    for (const deadline = Date.now() + 20_000; row.status === 'in-progress' && Date.now() < deadline; ) {
      await pool.query(`UPDATE calls SET modified_at = now() - interval '1 hour' WHERE id = $1`, [call.callId]);
      failed += (await reconcileCalls(deps, { startAfterMs: 3600_000, staleAfterMs: 1000 })).failed;
      row = await callRow(pool, call.callId);
      if (row.status === 'in-progress') await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(failed >= 1);
    assert.equal(row.status, 'failed');
    assert.equal(row.end_reason, 'workflow_lost');
    assert.equal(await countLiveSlots(pool, team.teamId), 0, 'the slot is free');
  });
});

describe('call workflow: determinism', () => {
  test('recorded call histories replay against the current workflow code', WORKFLOW_TEST, async () => {
    const files = readdirSync(HISTORIES_DIR).filter((f) => f.startsWith('call-') && f.endsWith('.bin'));
    assert.ok(files.length >= 5, `recorded histories in ${HISTORIES_DIR}`);
    const bundle = await workflowBundle();
    for (const file of files) {
      const history = History.decode(readFileSync(path.join(HISTORIES_DIR, file)));
      await ReplayWorker.runReplayHistory({ workflowBundle: bundle }, history, file);
    }
  });
});
