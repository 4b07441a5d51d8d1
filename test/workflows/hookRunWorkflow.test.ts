// The hook-run workflow with typed mock activities in the time-skipping environment.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { createHookActivities } from '../../activities/hooks.js';
import type { HookAutomation } from '../../src/domain/hookAutomation.js';
import { workflowBundle } from '../../src/temporal/worker.js';
import { HOOK_RUN_WORKFLOW_TYPE, hookRunWorkflowId, type HookRunInput, type HookRunResult } from '../../workflows/contracts.js';
import { createTimeSkippingEnv, WORKFLOW_TEST } from '../support/temporal.js';

const { History } = proto.temporal.api.history.v1;

type HookActivities = ReturnType<typeof createHookActivities>;
type Calls = { [K in keyof HookActivities]: Parameters<HookActivities[K]>[0][] };

const TASK_QUEUE = 'hook-run-test';
// Recorded histories (protobuf-encoded) of earlier versions of the workflow; the replay test below guards
// determinism. RECORD_HOOK_RUN_HISTORIES=1 re-records them from this run (only when the
// workflow changes on purpose in a way old runs cannot replay).
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
const RECORD = process.env.RECORD_HOOK_RUN_HISTORIES === '1';
let env: TestWorkflowEnvironment;

before(async () => {
  env = await createTimeSkippingEnv();
});
after(async () => {
  await env?.teardown();
});

/** Runs one hook run against mock activities; returns its outcome and what the activities saw. */
async function run(automation: HookAutomation, body: unknown, overrides: Partial<HookActivities> = {}, record?: string) {
  const calls: Calls = { scheduleHookCall: [], addHookContactToList: [] };
  const activities: HookActivities = {
    scheduleHookCall: async (input) => {
      calls.scheduleHookCall.push(input);
      return overrides.scheduleHookCall ? overrides.scheduleHookCall(input) : { callId: 'call-1', contactId: 'contact-1' };
    },
    addHookContactToList: async (input) => {
      calls.addHookContactToList.push(input);
      return overrides.addHookContactToList ? overrides.addHookContactToList(input) : { contactId: 'contact-1', contactCreated: true, added: true };
    },
  };
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: TASK_QUEUE, workflowBundle: await workflowBundle(), activities });
  const runId = randomUUID();
  const input: HookRunInput = { runId, hookId: randomUUID(), teamId: randomUUID(), automation, body, phoneRegion: 'US', deliveryId: null, receivedAt: new Date().toISOString() };
  const outcome = await worker.runUntil(
    env.client.workflow
      .execute(HOOK_RUN_WORKFLOW_TYPE, { taskQueue: TASK_QUEUE, workflowId: hookRunWorkflowId(runId), args: [input] })
      .then((result: HookRunResult) => ({ result, error: undefined }), (error: unknown) => ({ result: undefined, error })),
  );
  if (RECORD && record) {
    mkdirSync(HISTORIES_DIR, { recursive: true });
    const history = await env.client.workflow.getHandle(hookRunWorkflowId(runId)).fetchHistory();
    writeFileSync(path.join(HISTORIES_DIR, `hookRun-${record}.bin`), History.encode(history).finish());
  }
  return { ...outcome, calls, runId };
}

function failureOf(error: unknown): ApplicationFailure {
  assert.ok(error instanceof WorkflowFailedError, `expected the run to fail, got ${error}`);
  const cause = error.cause;
  // A failure raised by an activity arrives wrapped in an ActivityFailure.
  const failure = cause instanceof ApplicationFailure ? cause : (cause?.cause as ApplicationFailure);
  assert.ok(failure instanceof ApplicationFailure, `expected an ApplicationFailure, got ${cause}`);
  return failure;
}

const scheduleCall: HookAutomation = { kind: 'schedule_call', script_id: 'script-1', from_number: '+12125550100' };

describe('hook run workflow', () => {
  test('schedule_call maps the body and schedules one call with the hook’s script and number', WORKFLOW_TEST, async () => {
    const { result, calls, runId } = await run(scheduleCall, { contact: { phone: '(415) 555-0123', first_name: 'Ada' }, email: 'ada@example.com' }, {}, 'schedule_call');
    assert.deepEqual(calls.scheduleHookCall, [
      { runId, teamId: calls.scheduleHookCall[0].teamId, scriptId: 'script-1', fromNumber: '+12125550100', contact: { phone_number: '+14155550123', first_name: 'Ada', email: 'ada@example.com' } },
    ]);
    assert.deepEqual(result, { run_id: runId, automation: 'schedule_call', contact_id: 'contact-1', call_id: 'call-1' });
  });

  test('add_to_list upserts the mapped contact into the hook’s list', WORKFLOW_TEST, async () => {
    const { result, calls } = await run({ kind: 'add_to_list', list_id: 'list-1' }, { phone_number: '+14155550123', last_name: 'Lovelace' }, {}, 'add_to_list');
    assert.equal(calls.addHookContactToList.length, 1);
    assert.equal(calls.addHookContactToList[0].listId, 'list-1');
    assert.deepEqual(calls.addHookContactToList[0].contact, { phone_number: '+14155550123', last_name: 'Lovelace' });
    assert.equal(result?.list_id, 'list-1');
    assert.equal(result?.contact_created, true);
  });

  test('an unmappable body fails the run as UnmappableWebhookBody with a readable reason and calls no activity', WORKFLOW_TEST, async () => {
    const { error, calls } = await run(scheduleCall, { first_name: 'Ada', phone: 'call me maybe' }, {}, 'unmappable');
    const failure = failureOf(error);
    assert.equal(failure.type, 'UnmappableWebhookBody');
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /"call me maybe" is not a valid phone number/);
    assert.deepEqual(calls, { scheduleHookCall: [], addHookContactToList: [] });
  });

  test('a body that is not an object fails the run the same way', WORKFLOW_TEST, async () => {
    const { error } = await run({ kind: 'add_to_list', list_id: 'list-1' }, ['+14155550123']);
    assert.equal(failureOf(error).type, 'UnmappableWebhookBody');
  });

  test('a hook without automation completes without calling anything, whatever the body', WORKFLOW_TEST, async () => {
    const { result, calls, runId } = await run({ kind: 'none' }, 'not even an object');
    assert.deepEqual(result, { run_id: runId, automation: 'none' });
    assert.deepEqual(calls, { scheduleHookCall: [], addHookContactToList: [] });
  });

  test('a permanent automation failure ends the run failed with its type after one attempt', WORKFLOW_TEST, async () => {
    const { error, calls } = await run(scheduleCall, { phone: '+14155550123' }, {
      scheduleHookCall: async () => {
        throw ApplicationFailure.nonRetryable('The call could not be scheduled: script_id not found or does not belong to your team', 'HookCallRejected');
      },
    });
    const failure = failureOf(error);
    assert.equal(failure.type, 'HookCallRejected');
    assert.match(failure.message, /script_id not found/);
    assert.equal(calls.scheduleHookCall.length, 1);
  });

  test('a transient activity failure is retried with the same input until it succeeds', WORKFLOW_TEST, async () => {
    let attempts = 0;
    const { result, calls } = await run(
      scheduleCall,
      { phone: '+14155550123' },
      {
        scheduleHookCall: async () => {
          attempts += 1;
          if (attempts < 3) throw new Error('database unavailable');
          return { callId: 'call-9', contactId: 'contact-9' };
        },
      },
      'retried',
    );
    assert.equal(result?.call_id, 'call-9');
    assert.equal(calls.scheduleHookCall.length, 3);
    assert.deepEqual(new Set(calls.scheduleHookCall.map((c) => JSON.stringify(c))).size, 1);
  });
});

describe('hook run workflow replay', () => {
  test('recorded histories of earlier runs replay without nondeterminism', WORKFLOW_TEST, async () => {
    const files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.bin'));
    assert.ok(files.length >= 4, `recorded histories in ${HISTORIES_DIR}`);
    for (const file of files) {
      const history = History.decode(readFileSync(path.join(HISTORIES_DIR, file)));
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
    }
  });
});
