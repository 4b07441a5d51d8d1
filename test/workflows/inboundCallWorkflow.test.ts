// An inbound call's workflow in the time-skipping environment (docs/telephony.md, "Inbound
// calls"): the call taken by src/services/inboundCalls.ts (in progress, holding its slot), the
// real call activities over the test database, and a typed stand-in for the media edge's
// activities on a queue of its own. No dial: the edge's `answered` event starts the script.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import { acceptInboundCall } from '../../src/services/inboundCalls.js';
import { addTeamNumber } from '../../src/services/phoneNumbers.js';
import { INBOUND_CONNECT_TIMEOUT_MS } from '../../workflows/callWorkflow.js';
import { callEventSignal, callWorkflowId, type CallEvent } from '../../workflows/contracts.js';
import { createTestTeam } from '../support/app.js';
import { callRow, callTestConfig, historySteps, waitForCall } from '../support/calls.js';
import { callWorkflowEnv } from '../support/callWorkflowEnv.js';
import { startStandInEdge } from '../support/standInEdge.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
let deps: CallServiceDeps;
let numberSeq = 0;
const calls = callWorkflowEnv(callTestConfig(), (started) => ({ env, pool, plain, deps } = started));

const RECEPTION_SCRIPT = {
  name: 'Reception',
  steps: [
    { id: 'greet', type: 'say', text: 'Thank you for calling.' },
    { id: 'ask_reason', type: 'ask', question: 'How can I help you today?', variable: 'answers.reason', expect: 'free' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};

const freshNumber = () => `+1617${String(process.pid % 1000).padStart(3, '0')}${String(1000 + (numberSeq++ % 9000)).padStart(4, '0')}`;

/** A team whose number takes calls with the reception script, and one call to it. */
async function inboundCall(): Promise<{ callId: string; teamId: string; caller: string }> {
  const team = await createTestTeam(pool);
  const script = await insertScript(pool, { teamId: team.teamId, name: RECEPTION_SCRIPT.name, definition: RECEPTION_SCRIPT });
  const number = freshNumber();
  await addTeamNumber(pool, { teamId: team.teamId, phoneNumber: number, inboundScriptId: script.id });
  const caller = freshNumber();
  const call = await acceptInboundCall(deps, { toNumber: number, fromNumber: caller, sipCallId: randomUUID() });
  return { callId: call.callId, teamId: team.teamId, caller };
}

/** A stand-in edge: speaks instantly, answers every question with `answer`, counts hang-ups. */
function startAnsweringEdge(answer: string) {
  return startStandInEdge(
    env,
    {},
    () => ({
      async askCaller() {
        return { kind: 'utterance', text: answer, recognitionMs: 100 };
      },
    }),
    'inbound',
  );
}

const signal = (callId: string, event: CallEvent) => env.client.workflow.getHandle(callWorkflowId(callId)).signal(callEventSignal, event);
const result = (callId: string) => calls.result(callId, 60_000);

describe('an inbound call: the edge answers, the script runs through it', () => {
  test('answered: in_conversation, the inbound script runs on the edge, completed / agent_hangup, the slot freed, analysed', async () => {
    const edge = await startAnsweringEdge('I would like to change my appointment');
    try {
      const { callId, teamId, caller } = await inboundCall();
      assert.equal(await countLiveSlots(pool, teamId), 1);
      await signal(callId, { type: 'answered', event_id: `answered-${callId}`, media_task_queue: edge.taskQueue });
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const row = await waitForCall(pool, callId, (c) => c.analysed_at !== null);
      assert.equal(row.type, 'inbound');
      assert.equal(row.from_number, caller);
      assert.deepEqual(
        row.conversation.map((t) => `${t.role}: ${t.text}`),
        ['agent: Thank you for calling.', 'agent: How can I help you today?', 'user: I would like to change my appointment', 'agent: Goodbye.'],
      );
      assert.equal(edge.hangUps, 1);
      assert.match(row.transcript ?? '', /change my appointment/);
      assert.equal(await countLiveSlots(pool, teamId), 0, 'the slot is free again');
      const steps = historySteps(await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory());
      assert.ok(!steps.includes('placeCall') && !steps.includes('admitCall'), `no admission and no dial: ${steps.join(', ')}`);
      assert.ok(steps.includes('setCallProgress'), 'in_conversation once answered');
    } finally {
      await edge.stop();
    }
  });

  test('the caller leaves before the edge answers: hang-up / User Hangup, nothing said', async () => {
    const { callId, teamId } = await inboundCall();
    await signal(callId, { type: 'ended', reason: 'User Hangup', event_id: `ended-${callId}` });
    assert.deepEqual(await result(callId), { callId, status: 'hang-up', endReason: 'User Hangup' });
    assert.deepEqual((await callRow(pool, callId)).conversation, []);
    assert.equal(await countLiveSlots(pool, teamId), 0);
  });

  test('an edge that never reports the answer: failed / not_connected after INBOUND_CONNECT_TIMEOUT_MS, the slot freed', async () => {
    const { callId, teamId } = await inboundCall();
    await env.sleep(INBOUND_CONNECT_TIMEOUT_MS + 1_000);
    assert.deepEqual(await result(callId), { callId, status: 'failed', endReason: 'not_connected' });
    assert.equal(await countLiveSlots(pool, teamId), 0);
  });
});
