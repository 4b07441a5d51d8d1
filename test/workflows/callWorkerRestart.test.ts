// A call survives its worker: the worker stops mid-call, a new worker finishes the call.
// Its own file (own test server), since stopping a worker mid-way must not race other tests.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { scheduleCall } from '../../src/services/calls.js';
import { callWorkflowId, type CallWorkflowResult } from '../../workflows/contracts.js';
import { createTestTeam, testPool } from '../support/app.js';
import { callRow, callTestConfig, calleeNumber, createCallWorker, waitForCall } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;

before(async () => {
  env = await createTimeSkippingEnv();
  plain = new Client({ connection: env.connection, namespace: env.namespace });
  pool = await testPool();
});

after(async () => {
  await env?.teardown();
  await pool?.end();
});

const result = (callId: string): Promise<CallWorkflowResult> => plain.workflow.getHandle(callWorkflowId(callId)).result();

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
  first.shutdown();
  await firstRun;
  assert.equal((await callRow(pool, call.callId)).status, 'in-progress', 'the call is mid-way when the worker stops');
  const second = await createCallWorker(env, pool, restartConfig);
  const outcome = await second.runUntil(result(call.callId));
  assert.equal(outcome.status, 'completed');
  const row = await callRow(pool, call.callId);
  assert.ok(row.duration! >= 4, 'the durable timer kept running while no worker was there');
  assert.ok(row.analysed_at);
  assert.equal(row.conversation.length, row.transcript_json?.length, 'turns written once');
});
