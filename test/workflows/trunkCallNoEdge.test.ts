// A phone call through the SIP trunk (VOICE_PROVIDER=sip) when no media edge with a trunk
// polls the dial queue, in the time-skipping environment (the 30 s pick-up timeout is skipped):
// the call is never placed and ends failed / no_media_edge with a System Note saying why.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { scheduleCall } from '../../src/services/calls.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam } from '../support/app.js';
import { callRow, callTestConfig, calleeNumber, startCallWorkerEnv, type CallWorkerEnv } from '../support/calls.js';

const config = callTestConfig({ VOICE_PROVIDER: 'sip' });
let calls: CallWorkerEnv;

before(async () => {
  calls = await startCallWorkerEnv(config);
});

after(async () => {
  await calls?.stop();
});

test('no media edge takes the dial within 30 s: failed / no_media_edge, with a System Note, and the call was never dialled', async () => {
  const { env, pool } = calls;
  const team = await createTestTeam(pool);
  const call = await scheduleCall(
    { pool, temporal: env.client, config },
    { teamId: team.teamId, fromNumber: team.fromNumber, scriptId: team.scriptId, contact: { phone_number: calleeNumber('5150'), first_name: 'Ada' } },
  );
  const result = await env.client.workflow.getHandle(callWorkflowId(call.callId)).result();
  assert.deepEqual(result, { callId: call.callId, status: 'failed', endReason: 'no_media_edge' });
  const row = await callRow(pool, call.callId);
  assert.equal(row.provider, 'sip');
  const note = row.system_notes.find((n) => n.kind === 'telephony');
  assert.match(note?.text ?? '', /No media edge with a SIP trunk took the dial within 30 seconds/);
  const history = await env.client.workflow.getHandle(callWorkflowId(call.callId)).fetchHistory();
  assert.ok(!(history.events ?? []).some((e) => e.activityTaskStartedEventAttributes), 'no edge ever started the dial');
});
