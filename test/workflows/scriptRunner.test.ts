// The script runner inside the call workflow, end to end: the real API schedules a call,
// the real worker runs the call workflow with the simulator, the script's steps run as
// workflow code and activities, and get-call-result shows the outcome. Time-skipping
// environment, but results are awaited through a plain client (time skipping stays locked,
// calls run in real time): automatic skipping would fire activity timeouts out of turn
// while webhook and database activities are in flight.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { parseScriptDefinition, type ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';
import { createLogger } from '../../src/logging/logger.js';
import { scheduleCall } from '../../src/services/calls.js';
import { workflowBundle } from '../../src/temporal/worker.js';
import { callWorkflowId, type CallWorkflowResult } from '../../workflows/contracts.js';
import { MAX_SCRIPT_STEPS } from '../../workflows/scriptRunner.js';
import { createTestTeam, startTestApi, testConfig, type TestApi, type TestTeam } from '../support/app.js';
import { calleeNumber, historySteps } from '../support/calls.js';
import { createTimeSkippingEnv, WORKFLOW_TEST } from '../support/temporal.js';

const TASK_QUEUE = 'scripts-test';
const SETTINGS = { TEMPORAL_TASK_QUEUE: TASK_QUEUE, SIMULATOR_CALL_SECONDS: '1' };
const config = testConfig(SETTINGS);

let env: TestWorkflowEnvironment;
let plain: Client;
let api: TestApi;
let pool: Pool;
let worker: Worker;
let running: Promise<void>;

async function createWorker(cfg: Config = config, extra: { maxCachedWorkflows?: number } = {}): Promise<Worker> {
  return Worker.create({
    ...extra,
    connection: env.nativeConnection,
    taskQueue: cfg.TEMPORAL_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: createActivities({ config: cfg, pool, logger: createLogger('silent'), temporal: env.client }),
  });
}

before(async () => {
  env = await createTimeSkippingEnv();
  plain = new Client({ connection: env.connection, namespace: env.namespace });
  api = await startTestApi({ temporal: env.client, config: SETTINGS });
  pool = api.pool;
  worker = await createWorker();
  running = worker.run();
});

after(async () => {
  worker?.shutdown();
  await running;
  await api?.close();
  await env?.teardown();
  await pool?.end();
});

/** The team with the `identity` object type the demo script reads the date of birth from. */
async function teamWithIdentityType(): Promise<TestTeam> {
  const team = await createTestTeam(pool);
  const res = await api.request('POST', '/api/v1/object-types', {
    key: team.apiKey,
    body: { type_name: 'identity', schema: { date_of_birth: 'string' }, unique_by_contact: true },
  });
  assert.equal(res.status, 201, res.text);
  return team;
}

async function createScript(team: TestTeam, input: ScriptDefinitionInput): Promise<string> {
  const parsed = parseScriptDefinition(input);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  return (await insertScript(pool, { teamId: team.teamId, name: parsed.script.name, definition: parsed.script })).id;
}

async function placeCall(team: TestTeam, body: Record<string, unknown>): Promise<string> {
  const res = await api.request('POST', '/api/v1/create-phone-call', {
    key: team.apiKey,
    body: { from_number: team.fromNumber, script_id: team.scriptId, ...body },
  });
  assert.equal(res.status, 201, res.text);
  return res.json.call_id;
}

/** The call workflow's result, awaited in real time (see the top of the file). */
const finished = (callId: string): Promise<CallWorkflowResult> => plain.workflow.getHandle(callWorkflowId(callId)).result();

async function callResult(team: TestTeam, callId: string) {
  await finished(callId);
  const res = await api.request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
  assert.equal(res.status, 200, res.text);
  return res.json.call;
}

type Note = { kind: string; text: string; data?: any };
const authNotes = (call: { system_notes: Note[] }) => call.system_notes.filter((n) => n.kind === 'auth_check');

describe('the demo script on a simulated call', () => {
  test('a caller whose answers match the record is verified, and the result shows it', WORKFLOW_TEST, async () => {
    const team = await teamWithIdentityType();
    const callId = await placeCall(team, {
      contact: { phone_number: calleeNumber('1234'), first_name: 'Ada', last_name: 'Lovelace' },
      objects: { identity: { date_of_birth: '1985-04-03' } },
    });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'completed');
    assert.equal(call.end_reason, 'agent_hangup');
    assert.equal(
      call.transcript,
      [
        'Agent: Hello Ada, this is your voice assistant calling.',
        'Agent: Before we go on, could you tell me your full name?',
        'User: My name is Ada Lovelace.',
        'Agent: Thank you. And what is your date of birth?',
        "User: It's April 3rd, 1985.",
        'Agent: Thank you, Ada, you are verified.',
        'Agent: Thank you for your time. Goodbye.',
      ].join('\n'),
    );
    assert.deepEqual(call.objectives, [
      { objective: 'Greet the contact', met: true },
      { objective: 'Verify the caller', met: true },
    ]);
    assert.equal(call.structured_data.verified, true);
    assert.equal(call.structured_data.auth_check_status, 'verified');
    assert.equal(call.structured_data.caller_name, 'Ada Lovelace');
    assert.equal(call.structured_data.date_of_birth, 'April 3rd, 1985');
    const [note] = authNotes(call);
    assert.equal(note.data.status, 'verified');
    assert.match(note.text, /^Auth Check verified: 2 matched, 2 required, method exact/);
    assert.deepEqual(
      note.data.positions.map((p: any) => [p.position, p.record_value, p.check_value, p.outcome]),
      [
        [0, 'Ada Lovelace', 'Ada Lovelace', 'exact'],
        [1, '1985-04-03', 'April 3rd, 1985', 'exact'],
      ],
    );
    assert.equal(note.data.variables.verified, true);
    assert.equal(note.data.variables.exact_match, true);
    const summary = call.system_notes.find((n: Note) => n.kind === 'script_result');
    assert.match(summary.text, /ran to its end at step "goodbye".*2 of 2 objectives met/);
  });

  test('a caller the record cannot confirm fails the check, and the result shows why', WORKFLOW_TEST, async () => {
    const team = await teamWithIdentityType();
    // No identity object: the callee cannot say a date of birth and the record has none.
    const callId = await placeCall(team, { contact: { phone_number: calleeNumber('4321'), first_name: 'Grace', last_name: 'Hopper' } });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'completed', 'the script ran to its end: the call completed even though verification failed');
    assert.match(call.transcript, /User: I'm not sure\.\nAgent: Sorry, I could not verify your identity/);
    assert.deepEqual(call.objectives, [
      { objective: 'Greet the contact', met: true },
      { objective: 'Verify the caller', met: false },
    ]);
    assert.equal(call.structured_data.verified, false);
    assert.equal(call.structured_data.auth_check_status, 'failed');
    const [note] = authNotes(call);
    assert.equal(note.data.status, 'failed');
    assert.deepEqual(note.data.variables.failed_checks, ['1']);
    assert.deepEqual(note.data.variables.matched_checks, ['0']);
    assert.equal(note.data.positions[1].reason, 'missing');
  });

  test('only answered calls run the script: a callee who hangs up leaves no Auth Check', WORKFLOW_TEST, async () => {
    const team = await teamWithIdentityType();
    const callId = await placeCall(team, {
      contact: { phone_number: calleeNumber('0006'), first_name: 'Ada' },
      objects: { identity: { date_of_birth: '1985-04-03' } },
    });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'hang-up');
    assert.equal(call.end_reason, 'User Hangup');
    assert.deepEqual(authNotes(call), []);
  });
});

describe('scripts with per-script simulated answers, webhooks and record sets', () => {
  let server: http.Server;
  let base: string;
  let holdNext = false;
  let held: Array<() => void> = [];
  let requests: Array<{ url: string; body: string }> = [];
  const people = [
    { id: 'p1', name: 'Jane Doe', dob: '1990-12-24' },
    { id: 'p2', name: 'Jane Doe', dob: '1985-04-03' },
  ];

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        requests.push({ url: req.url ?? '', body });
        const answer = () => {
          if (res.headersSent || res.destroyed) return;
          if (req.url?.startsWith('/error')) {
            res.writeHead(500).end('boom');
            return;
          }
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(people));
        };
        if (holdNext) {
          holdNext = false;
          held.push(answer);
        } else answer();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    held.splice(0).forEach((answer) => answer());
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const lookupScript = (url: string, extra: Partial<ScriptDefinitionInput> = {}): ScriptDefinitionInput => ({
    name: 'Lookup and verify',
    objectives: [{ objective: 'Verify against the lookup', met_when: { variable: 'steps.check.result', equals: true } }],
    structured_data: { verified: 'auth_check.verified', match: 'auth_check.verified_data', lookup_status: 'webhook.status' },
    simulated_answers: { 'answers.name': 'Sure, it is {{contact.full_name}}.', 'answers.dob': 'It is the 3rd of April, 1985.' },
    steps: [
      { id: 'ask_name', type: 'ask', question: 'Your name?', variable: 'answers.name', expect: 'name' },
      { id: 'ask_dob', type: 'ask', question: 'Your date of birth?', variable: 'answers.dob', expect: 'date' },
      { id: 'lookup', type: 'webhook', method: 'POST', url, body: { name: '{{answers.name}}', phone: '{{contact.phone_number}}' }, on_error: 'lookup_failed' },
      {
        id: 'check',
        type: 'tool',
        tool: 'Auth | Check',
        settings: { record_array: ['{{webhook.response}}.name', '{{webhook.response}}.dob'], check_array: ['{{answers.name}}', '{{answers.dob}}'], raw_data: '{{webhook.response}}' },
      },
      { id: 'route', type: 'branch', cases: [{ when: { variable: 'auth_check.verified', equals: true }, next: 'ok' }], default: 'bye' },
      { id: 'ok', type: 'say', text: 'Found you: {{auth_check.matched_count}} of {{auth_check.required_count}}.', next: 'bye' },
      { id: 'lookup_failed', type: 'say', text: 'The lookup failed with {{webhook.status}}.', next: 'bye' },
      { id: 'bye', type: 'end' },
    ],
    ...extra,
  });

  test('a webhook step feeds a record set to Auth Check; the passing record lands in verified_data', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const scriptId = await createScript(team, lookupScript(`${base}/people`));
    requests = [];
    const callId = await placeCall(team, { script_id: scriptId, contact: { phone_number: calleeNumber('2222'), first_name: 'Jane', last_name: 'Doe' } });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'completed');
    assert.deepEqual(JSON.parse(requests[0].body), { name: 'Jane Doe', phone: call.to_number }, 'the body template was rendered');
    assert.match(call.transcript, /User: Sure, it is Jane Doe\.\nAgent: Your date of birth\?\nUser: It is the 3rd of April, 1985\./);
    assert.match(call.transcript, /Agent: Found you: 2 of 2\./);
    assert.deepEqual(JSON.parse(call.structured_data.match), [people[1]]);
    assert.equal(call.structured_data.lookup_status, 200);
    assert.deepEqual(call.objectives, [{ objective: 'Verify against the lookup', met: true }]);
    const [note] = authNotes(call);
    assert.deepEqual(note.data.records, [
      { record: 0, matched_count: 1, verified: false },
      { record: 1, matched_count: 2, verified: true },
    ]);
    assert.ok(call.system_notes.some((n: Note) => n.kind === 'webhook' && /answered 200/.test(n.text)));
  });

  test('a per-script simulated answer that contradicts the record fails the check', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const scriptId = await createScript(team, lookupScript(`${base}/people`, { simulated_answers: { 'answers.name': 'Jane Doe', 'answers.dob': 'It is 1 May 2000.' } }));
    const callId = await placeCall(team, { script_id: scriptId, contact: { phone_number: calleeNumber('2223'), first_name: 'Jane', last_name: 'Doe' } });
    const call = await callResult(team, callId);
    assert.equal(call.structured_data.verified, false);
    assert.equal(call.structured_data.match, '');
    assert.deepEqual(call.objectives, [{ objective: 'Verify against the lookup', met: false }]);
    assert.equal(authNotes(call)[0].data.status, 'failed');
  });

  test('a failing webhook takes the on_error branch with its status', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const scriptId = await createScript(team, lookupScript(`${base}/error`));
    const callId = await placeCall(team, { script_id: scriptId, contact: { phone_number: calleeNumber('2224'), first_name: 'Jane' } });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'completed');
    assert.match(call.transcript, /Agent: The lookup failed with 500\.$/);
    assert.deepEqual(authNotes(call), [], 'the Auth Check step was skipped');
  });

  test('the script survives a worker restart mid-call: the new worker redoes the interrupted step and says nothing twice', WORKFLOW_TEST, async () => {
    const restart = testConfig({ ...SETTINGS, TEMPORAL_TASK_QUEUE: `scripts-restart-${randomUUID()}` });
    const team = await createTestTeam(pool);
    const scriptId = await createScript(team, lookupScript(`${base}/people`));
    // No workflow cache: the test server never moves a task off a stopped worker's sticky queue.
    const first = await createWorker(restart, { maxCachedWorkflows: 0 });
    const firstRun = first.run();
    held = [];
    requests = [];
    holdNext = true;
    const { callId } = await scheduleCall(
      { pool, temporal: env.client, config: restart },
      { teamId: team.teamId, fromNumber: team.fromNumber, scriptId, contact: { phone_number: calleeNumber('2225'), first_name: 'Jane', last_name: 'Doe' } },
    );
    // Both questions are answered and the webhook step is in flight: stop the worker there.
    for (let i = 0; held.length === 0; i++) {
      assert.ok(i < 400, 'the webhook step started');
      await new Promise((r) => setTimeout(r, 50));
    }
    first.shutdown();
    await firstRun;
    const second = await createWorker(restart);
    await second.runUntil(finished(callId));
    // The first request's client went away with the old worker; close it server-side.
    held.splice(0).forEach((answer) => answer());
    const call = await callResult(team, callId);
    assert.equal(call.status, 'completed');
    assert.equal(requests.length, 2, 'the interrupted webhook request was sent again by the new worker');
    const lines = call.transcript.split('\n');
    assert.equal(lines.filter((l: string) => l === 'Agent: Your name?').length, 1);
    assert.equal(lines.filter((l: string) => l.startsWith('User: ')).length, 2);
    assert.equal(call.structured_data.verified, true);
    assert.equal(authNotes(call).length, 1);
  });
});

describe('runtime guards and visibility', () => {
  test('each step outcome is recorded in the workflow history, which replays deterministically', WORKFLOW_TEST, async () => {
    const team = await teamWithIdentityType();
    const callId = await placeCall(team, {
      contact: { phone_number: calleeNumber('3333'), first_name: 'Ada', last_name: 'Lovelace' },
      objects: { identity: { date_of_birth: '1985-04-03' } },
    });
    await finished(callId);
    const history = await env.client.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
    const events = history.events ?? [];
    const activityTypes = historySteps(history);
    assert.equal(activityTypes.filter((t) => t === 'simulateCalleeAnswer').length, 0, "the callee's answers came with the simulator's plan (placeCall)");
    assert.equal(activityTypes.filter((t) => t === 'recordConversation').length, 1, "the script's turns and notes are written once, with the answer");
    const memoUpdates = events.filter((e) => e.workflowPropertiesModifiedEventAttributes);
    assert.equal(memoUpdates.length, 7, 'one memo update per step run (greet, ask_name, ask_dob, verify, route, verified, goodbye)');
    // The history replays on the current code without a nondeterminism error (a restarted worker rebuilds the script state this way).
    await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, callWorkflowId(callId));
  });

  test('a script that never reaches an end is stopped and the call fails', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const scriptId = await createScript(team, {
      name: 'Loop',
      steps: [
        { id: 'a', type: 'set', variable: 'x', value: 1, next: 'b' },
        { id: 'b', type: 'set', variable: 'y', value: 2, next: 'a' },
      ],
    });
    const callId = await placeCall(team, { script_id: scriptId, contact: { phone_number: calleeNumber('4444'), first_name: 'Loop' } });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'failed');
    assert.equal(call.end_reason, 'provider_error');
    assert.ok(call.system_notes.some((n: Note) => n.kind === 'script_error' && n.text.includes(`${MAX_SCRIPT_STEPS} steps`)));
  });

  test('a stored script that is not valid is not run and the call fails', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const { id: scriptId } = await insertScript(pool, { teamId: team.teamId, name: 'Broken', definition: { name: 'Broken', steps: [{ id: 'x', type: 'shout' }] } });
    const callId = await placeCall(team, { script_id: scriptId, contact: { phone_number: calleeNumber('5555'), first_name: 'B' } });
    const call = await callResult(team, callId);
    assert.equal(call.status, 'failed');
    assert.equal(call.end_reason, 'provider_error');
    assert.match(call.system_notes[0].text, /The script is invalid and was not run: steps\[0\] \(id "x"\)\.type/);
  });
});
