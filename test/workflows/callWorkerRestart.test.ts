// A call survives its worker: the worker stops mid-call, a new worker finishes the call.
// Its own file, on a real Temporal dev server (the time-skipping test server does not move
// a workflow task off a stopped worker's sticky queue), in real time.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { scheduleCall } from '../../src/services/calls.js';
import type { CallWorkflowResult } from '../../workflows/contracts.js';
import { createTestTeam, testPool } from '../support/app.js';
import { callResultOrStuck, callRow, callTestConfig, calleeNumber, createCallWorker, waitForCall } from '../support/calls.js';
import { createLocalEnv } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;

before(async () => {
  env = await createLocalEnv();
  plain = new Client({ connection: env.connection, namespace: env.namespace });
  pool = await testPool();
});

after(async () => {
  await env?.teardown();
  await pool?.end();
});

const step = (what: string) => process.env.DEBUG_RESTART && process.stderr.write(`${new Date().toISOString()} ${what}\n`);

/** The result, or a failure naming where the call is stuck after 90 s. */
function result(callId: string): Promise<CallWorkflowResult> {
  return callResultOrStuck(pool, plain, callId, 90_000);
}

test('the worker stopped mid-call and a new worker finishing it', async () => {
  const restartConfig = callTestConfig({ TEMPORAL_TASK_QUEUE: `calls-restart-${randomUUID()}`, SIMULATOR_CALL_SECONDS: '4' });
  const restartDeps = { pool, temporal: env.client, config: restartConfig };
  const team = await createTestTeam(pool);
  const first = await createCallWorker(env, pool, restartConfig);
  const firstRun = first.run();
  const call = await scheduleCall(restartDeps, {
    teamId: team.teamId,
    fromNumber: team.fromNumber,
    scriptId: team.scriptId,
    contact: { phone_number: calleeNumber('8888'), first_name: 'Ada' },
  });
  await waitForCall(pool, call.callId, (c) => c.status === 'in-progress');
  step('in progress; stopping the first worker');
  first.shutdown();
  await firstRun;
  step('first worker stopped');
  assert.equal((await callRow(pool, call.callId)).status, 'in-progress', 'the call is mid-way when the worker stops');
  const second = await createCallWorker(env, pool, restartConfig);
  step('second worker created');
  const outcome = await second.runUntil(result(call.callId));
  step('second worker done');
  assert.equal(outcome.status, 'completed');
  const row = await callRow(pool, call.callId);
  assert.ok(row.duration! >= 4, 'the durable timer kept running while no worker was there');
  assert.ok(row.analysed_at);
  assert.equal(row.conversation.length, row.transcript_json?.length, 'turns written once');
});
