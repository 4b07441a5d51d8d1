// Live calls' workflow tasks on a task queue of their own (docs/calls.md, "Task queues"): the
// service's workers, as startServiceWorker runs them, poll the service's queue and its
// live-call queue; an admitted phone call continues as new on the live-call queue, and web and
// inbound calls start there, so the admissions of a campaign falling due never queue ahead of
// calls that talk; while the live calls run late, a call that ends leaves its slot to the
// admission pacer. The time-skipping server, the real activities over the test database, the
// simulator.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/logging/logger.js';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { getOrCreateSharedWebContact } from '../../src/db/repositories/contacts.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { scheduleCall, type CallServiceDeps } from '../../src/services/calls.js';
import { admitDueCalls } from '../../src/services/callSlots.js';
import { countedSlots } from '../../src/db/repositories/concurrencySlots.js';
import { acceptInboundCall } from '../../src/services/inboundCalls.js';
import { addTeamNumber } from '../../src/services/phoneNumbers.js';
import { liveTimerLateness } from '../../src/metrics/workerMetrics.js';
import { createWorker, liveCallTaskQueue, workflowBundle } from '../../src/temporal/worker.js';
import { callEventSignal, callWorkflowId } from '../../workflows/contracts.js';
import { LIVE_CALL_QUEUE_PATCH } from '../../workflows/callWorkflow.js';
import { createTestTeam, testPool } from '../support/app.js';
import { calleeNumber, callResultOrStuck, callRow, callTestConfig, historySteps, memoUpserts } from '../support/calls.js';
import { scheduleSimulatedCall } from '../support/callWorkflowEnv.js';
import { eventually } from '../support/eventually.js';
import { createTimeSkippingEnv, WORKFLOW_TEST } from '../support/temporal.js';

const { History } = proto.temporal.api.history.v1;
// Recorded runs join the call histories that callWorkflowLifecycle replays.
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'callHistories');
const config = callTestConfig();
const LIVE = liveCallTaskQueue(config.TEMPORAL_TASK_QUEUE);
let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
let deps: CallServiceDeps;
let workers: Worker[] = [];
let running: Promise<unknown> | undefined;
// What the workers' holdFreedSlots answers (startServiceWorker: whether the live calls run late).
let liveCallsLate = false;

before(async () => {
  env = await createTimeSkippingEnv();
  pool = await testPool();
  // As startServiceWorker: one worker per queue, each told the live-call queue.
  const activityDeps = { config, pool, logger: createLogger('silent'), temporal: env.client, liveTaskQueue: LIVE, holdFreedSlots: () => liveCallsLate };
  const queue = { connection: env.nativeConnection, namespace: 'default', deps: activityDeps };
  workers = [await createWorker({ ...queue, taskQueue: config.TEMPORAL_TASK_QUEUE }), await createWorker({ ...queue, taskQueue: LIVE })];
  running = Promise.all(workers.map((w) => w.run()));
  // Results through a plain client: time skipping stays locked, the calls run in real time.
  plain = new Client({ connection: env.connection, namespace: env.namespace });
  deps = { pool, temporal: env.client, config };
});

after(async () => {
  for (const w of workers) w.shutdown();
  await running;
  await env?.teardown();
  await pool?.end();
});

type Events = NonNullable<Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']>;

/** The histories of the call's runs, oldest first (each run names the one it continued). */
async function runsOf(callId: string): Promise<{ runId: string; events: Events }[]> {
  const runs: { runId: string; events: Events }[] = [];
  let runId: string | undefined = (await plain.workflow.getHandle(callWorkflowId(callId)).describe()).runId;
  while (runId) {
    const events: Events = (await plain.workflow.getHandle(callWorkflowId(callId), runId).fetchHistory()).events ?? [];
    runs.unshift({ runId, events });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return runs;
}

test('an admitted phone call continues as new on the live-call queue: admission on the service queue, dial, talk, end and analysis on the live one', WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool);
  const call = await scheduleSimulatedCall(deps, team, '1234');
  const result = await callResultOrStuck(pool, plain, call.callId, 60_000);
  assert.deepEqual(result, { callId: call.callId, status: 'completed', endReason: 'agent_hangup' });

  const runs = await runsOf(call.callId);
  assert.equal(runs.length, 2, 'two runs: admission, then the live call');
  const [admission, live] = runs;
  const startedOn = (events: Events) => events[0]?.workflowExecutionStartedEventAttributes?.taskQueue?.name;
  assert.equal(startedOn(admission.events), config.TEMPORAL_TASK_QUEUE);
  assert.equal(startedOn(live.events), LIVE);
  assert.deepEqual(historySteps({ events: admission.events }), ['admitCall']);
  const patches = admission.events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
  assert.equal(patches.length > 0, true, `the ${LIVE_CALL_QUEUE_PATCH} patch is recorded`);
  const continued = admission.events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
  assert.equal(continued?.taskQueue?.name, LIVE, 'the admission run continued on the live-call queue');
  const liveSteps = historySteps({ events: live.events });
  assert.equal(liveSteps.includes('admitCall'), false, 'admitted once');
  for (const step of ['placeCall', 'recordConversation', 'completeCall', 'analyseCall']) assert.ok(liveSteps.includes(step), `${step} on the live-call queue (${liveSteps.join(', ')})`);
  // Every workflow task of the live run ran on the live-call queue (or the sticky queue of its worker).
  for (const e of live.events) {
    const queue = e.workflowTaskScheduledEventAttributes?.taskQueue?.name;
    if (queue) assert.ok(queue === LIVE || queue !== config.TEMPORAL_TASK_QUEUE, `a live task on ${queue}`);
  }

  const row = await callRow(pool, call.callId);
  assert.equal(row.status, 'completed');
  assert.ok(row.actual_time && row.end_time && row.analysed_at, 'started, ended and analysed');
  assert.ok(row.conversation.length > 0, 'the script ran');
});

/** Live timers the workers' histogram has counted, and the seconds of lateness it has summed. */
async function liveTimersCounted(): Promise<{ count: number; seconds: number }> {
  const values = (await liveTimerLateness.get()).values;
  const value = (name: string) => values.find((v) => v.metricName === name)?.value ?? 0;
  return { count: value('voice_agent_live_timer_lateness_seconds_count'), seconds: value('voice_agent_live_timer_lateness_seconds_sum') };
}

test("the live-call queue's worker tells how late each of its calls' timers fired; a timer on the service queue is not a live call's", WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool);
  const counted = await liveTimersCounted();
  // Due in a second and a half: its admission run sleeps on a timer of the service queue first.
  const call = await scheduleSimulatedCall(deps, team, '1234', { scheduledTime: new Date(Date.now() + 1_500) });
  const result = await callResultOrStuck(pool, plain, call.callId, 60_000);
  assert.equal(result.status, 'completed');
  const [admission, live] = await runsOf(call.callId);
  const fired = (events: Events) => events.filter((e) => e.timerFiredEventAttributes).length;
  assert.ok(fired(admission.events) >= 1, 'the admission run waited on a timer');
  assert.ok(fired(live.events) >= 3, 'ring, talk and analysis timers');
  const now = await liveTimersCounted();
  // Both workers run in this process: the admission run's timer, counted, would make one more.
  assert.equal(now.count - counted.count, fired(live.events), "each of the live run's timers, once; the service queue's not");
  const seconds = now.seconds - counted.seconds;
  assert.ok(seconds >= 0 && seconds < 30, `lateness observed in seconds (${seconds} s for ${now.count - counted.count} timers)`);
});

test("while the live calls run late, a call that ends leaves its slot free for the admission pacer: the next call in line is not started by the release", WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool, { maxConcurrent: 1 });
  liveCallsLate = true;
  let next: { callId: string };
  try {
    const first = await scheduleSimulatedCall(deps, team, '1234');
    await eventually(async () => (await callRow(pool, first.callId)).status === 'in-progress', 'the first call started');
    next = await scheduleSimulatedCall(deps, team, '1234');
    const nextId = next.callId;
    await eventually(async () => (await callRow(pool, nextId)).progress === 'waiting_for_slot', 'the next call waiting in line');
    assert.equal((await callRow(pool, first.callId)).status, 'in-progress', 'the next call asked while the first one talked (3 s)');
    assert.equal((await callResultOrStuck(pool, plain, first.callId, 60_000)).status, 'completed');
    await eventually(async () => (await countedSlots(pool, team.teamId)) === 0, "the first call's slot freed");
    await delay(500);
    const waiting = await callRow(pool, nextId);
    assert.deepEqual([waiting.status, waiting.progress, waiting.slot_granted_at], ['scheduled', 'waiting_for_slot', null], 'the freed slot stays free');
  } finally {
    liveCallsLate = false;
  }
  // The pacer's step hands it on.
  assert.equal((await admitDueCalls(deps, 1, [team.teamId])).length, 1);
  assert.equal((await callResultOrStuck(pool, plain, next.callId, 60_000)).status, 'completed');
});

test('the runs of a call that moved to the live-call queue replay on the current workflow code', WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool);
  const call = await scheduleSimulatedCall(deps, team, '0001');
  const result = await callResultOrStuck(pool, plain, call.callId, 60_000);
  assert.equal(result.status, 'rang-out');
  const runs = await runsOf(call.callId);
  assert.equal(runs.length, 2);
  const bundle = await workflowBundle();
  for (const run of runs) {
    const replayed = await Worker.runReplayHistory({ workflowBundle: bundle }, { events: run.events }, `${callWorkflowId(call.callId)}-${run.runId}`);
    assert.equal(replayed, undefined);
  }
});

test("an admitted call's live run starts showing in-progress and shows the script's steps run in one task in one memo upsert; both runs replay", WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool);
  const call = await scheduleSimulatedCall(deps, team, '1237');
  assert.equal((await callResultOrStuck(pool, plain, call.callId, 60_000)).status, 'completed');
  const [admission, live] = await runsOf(call.callId);
  await recordRun(admission, 'admission-run-continued');
  await recordRun(live, 'live-run-memo-once');

  // The continue-as-new carried the call's search attributes with CallStatus in-progress: the
  // live run upserts only its terminal status.
  const startedWith = live.events[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {};
  const keyword = (name: string) => {
    const data = startedWith[name]?.data;
    return data ? JSON.parse(Buffer.from(data).toString()) : undefined;
  };
  assert.equal(keyword('CallStatus'), 'in-progress');
  assert.equal(keyword('TeamId'), team.teamId, "the call's other search attributes go on");
  assert.equal(keyword('CallId'), call.callId);
  const statusUpserts = live.events
    .map((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.CallStatus?.data)
    .filter((data) => data)
    .map((data) => JSON.parse(Buffer.from(data!).toString()));
  assert.deepEqual(statusUpserts, ['completed'], 'no upsert of the in-progress the run started with');

  // The simulated callee answered every step in one task: one memo upsert lists them, the last as script_step.
  const memos = memoUpserts({ events: live.events });
  assert.equal(memos.length, 1, `one memo upsert for the steps run together: ${JSON.stringify(memos)}`);
  const shown = memos[0].script_steps as { n: number; id: string; outcome: Record<string, unknown> }[];
  assert.deepEqual(
    shown.map((step) => [step.n, step.id]),
    [[1, 'greet'], [2, 'ask_name'], [3, 'ask_dob'], [4, 'verify'], [5, 'route'], [6, 'not_verified'], [7, 'goodbye']],
  );
  assert.equal(shown[1].outcome.answer, 'Ada Lovelace', "each step's outcome");
  assert.deepEqual(memos[0].script_step, shown[6], 'script_step is the last step run, as before');

  const bundle = await workflowBundle();
  for (const run of [admission, live]) {
    assert.equal(await Worker.runReplayHistory({ workflowBundle: bundle }, { events: run.events }, `${callWorkflowId(call.callId)}-${run.runId}`), undefined);
  }
});

test("a live run's memo shows the steps run so far before a webhook step's request goes out, and the rest at the end", WORKFLOW_TEST, async () => {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"found":true}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const team = await createTestTeam(pool);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/lookup`;
    const steps = [
      { id: 'ask_name', type: 'ask', question: 'Your name?', variable: 'answers.name', expect: 'name' },
      { id: 'lookup', type: 'webhook', method: 'POST', url, body: { name: '{{answers.name}}' } },
      { id: 'bye', type: 'end', text: 'Goodbye.' },
    ];
    const script = await insertScript(pool, { teamId: team.teamId, name: 'Lookup', definition: { name: 'Lookup', steps } });
    const call = await scheduleCall(deps, { teamId: team.teamId, fromNumber: team.fromNumber, scriptId: script.id, contact: { phone_number: calleeNumber('1238'), first_name: 'Ada', last_name: 'Lovelace' } });
    assert.equal((await callResultOrStuck(pool, plain, call.callId, 60_000)).status, 'completed');
    assert.deepEqual(requests, ['/lookup']);
    const [, live] = await runsOf(call.callId);
    const memos = memoUpserts({ events: live.events }).map((m) => (m.script_steps as { id: string }[]).map((step) => step.id));
    assert.deepEqual(memos, [['ask_name'], ['lookup', 'bye']]);
    const firstMemo = live.events.findIndex((e) => e.workflowPropertiesModifiedEventAttributes);
    const request = live.events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callWebhook');
    assert.ok(firstMemo >= 0 && firstMemo < request, 'the steps before the webhook show before its request is scheduled');
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** With RECORD_CALL_HISTORIES=1 (or naming it): keeps a run's history for the replay test of callWorkflowLifecycle. */
async function recordRun(run: { events: Events }, name: string): Promise<void> {
  const record = process.env.RECORD_CALL_HISTORIES ?? '';
  if (record !== '1' && !record.split(',').includes(name)) return;
  writeFileSync(path.join(HISTORIES_DIR, `call-${name}.bin`), History.encode({ events: run.events }).finish());
}

/** The call's one run started on the live-call queue, and every workflow task of it ran there (or on its worker's sticky queue). */
async function ranOnTheLiveQueueAlone(callId: string): Promise<void> {
  const runs = await runsOf(callId);
  assert.equal(runs.length, 1, 'one run: no move');
  const [run] = runs;
  assert.equal(run.events[0]?.workflowExecutionStartedEventAttributes?.taskQueue?.name, LIVE, 'started on the live-call queue');
  for (const e of run.events) {
    const queue = e.workflowTaskScheduledEventAttributes?.taskQueue?.name;
    if (queue) assert.notEqual(queue, config.TEMPORAL_TASK_QUEUE, 'no task on the service queue');
  }
}

test('a web call, live from its first moment, starts on the live-call queue when the service names one', WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool);
  const contact = await getOrCreateSharedWebContact(pool, team.teamId);
  const call = await scheduleCall({ ...deps, liveTaskQueue: LIVE }, { teamId: team.teamId, scriptId: team.scriptId, contact: { id: contact.id }, type: 'web' });
  const handle = plain.workflow.getHandle(callWorkflowId(call.callId));
  await handle.signal(callEventSignal, { type: 'answered', event_id: 'answered' });
  await handle.signal(callEventSignal, { type: 'ended', reason: 'User Hangup', event_id: 'ended' });
  assert.deepEqual(await callResultOrStuck(pool, plain, call.callId, 60_000), { callId: call.callId, status: 'hang-up', endReason: 'User Hangup' });
  await ranOnTheLiveQueueAlone(call.callId);
});

test('an inbound call starts on the live-call queue when the service names one', WORKFLOW_TEST, async () => {
  const team = await createTestTeam(pool);
  const script = await insertScript(pool, { teamId: team.teamId, name: 'Reception', definition: { name: 'Reception', steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] } });
  const fresh = () => `+1617${String(process.pid % 1000).padStart(3, '0')}${String(1000 + Math.floor(Math.random() * 9000))}`;
  const number = fresh();
  await addTeamNumber(pool, { teamId: team.teamId, phoneNumber: number, inboundScriptId: script.id });
  const call = await acceptInboundCall({ ...deps, liveTaskQueue: LIVE }, { toNumber: number, fromNumber: fresh(), sipCallId: randomUUID() });
  // The caller leaves before the media edge answers.
  await plain.workflow.getHandle(callWorkflowId(call.callId)).signal(callEventSignal, { type: 'ended', reason: 'User Hangup', event_id: 'ended' });
  assert.deepEqual(await callResultOrStuck(pool, plain, call.callId, 60_000), { callId: call.callId, status: 'hang-up', endReason: 'User Hangup' });
  await ranOnTheLiveQueueAlone(call.callId);
});
