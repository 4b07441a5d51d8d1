// Outbound phone calls whose trunk is the problem, through the whole stack: calls created over
// HTTP with create-phone-call (VOICE_PROVIDER=sip), the real API and call worker, a Temporal
// dev server, and the real media edge (startVoiceEdge with its SIP trunk agent over UDP, RTP,
// Festival). The trunk is a UDP port on loopback: while nothing listens there it is
// unreachable; then SIPp listens on it as a trunk that challenges every INVITE with 401 or 407
// (test/mediaEdge/sipScenarios), checks the digest answer, answers, and waits for our BYE.
// The agent's T1 is 50 ms, so Timer B (64×T1) gives up on the silent trunk in 3.2 s, not 32 s.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freePort } from '../../src/localPorts.js';
import { freeSipPort } from '../support/sipPorts.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { createTestTeam, type TestApi, type TestTeam } from '../support/app.js';
import { callResultOrStuck, callRow } from '../support/calls.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';
import { startSipp } from '../support/sipp.js';

const CALLEE = '+14155550181';
/** Not screened for an answering machine: SIPp sends no audio, and a silent line is a machine. */
const SCRIPT = { name: 'Short call', voicemail_detection: false, steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] };

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let scriptId: string;
/** The trunk's UDP port: nobody's at first, SIPp's during the digest tests. */
let trunkPort: number;

before(async () => {
  stack = await startVoiceStack('trunk-reach', { VOICE_PROVIDER: 'sip' });
  ({ env, app } = stack);
  team = await createTestTeam(app.pool);
  ({ id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  trunkPort = await freePort();
  await stack.startEdge({
    trunk: parseTrunkSettings({
      SIP_TRUNK_URI: `sip:127.0.0.1:${trunkPort};transport=udp`,
      SIP_TRUNK_USERNAME: 'alice',
      SIP_TRUNK_PASSWORD: 'secret',
      SIP_LISTEN: `127.0.0.1:${await freeSipPort()}`,
      RTP_PORT_RANGE: '44800-44899',
    }),
    trunkTimers: { t1Ms: 50 },
  });
});

after(async () => {
  await stack?.stop();
});

async function createPhoneCall(): Promise<string> {
  const res = await app.request('POST', '/api/v1/create-phone-call', {
    key: team.apiKey,
    body: { from_number: team.fromNumber, script_id: scriptId, contact: { phone_number: CALLEE, first_name: 'Ada' } },
  });
  assert.equal(res.status, 201, res.text);
  return res.json.call_id as string;
}

const result = (callId: string) => callResultOrStuck(app.pool, env.client, callId, 60_000);

describe('outbound phone calls and the trunk itself', { timeout: 120_000 }, () => {
  test('a trunk nobody answers over UDP: failed / trunk_error after Timer B, the System Note naming the trunk and why', async () => {
    const callId = await createPhoneCall();
    assert.deepEqual(await result(callId), { callId, status: 'failed', endReason: 'trunk_error' });
    const notes = (await callRow(app.pool, callId)).system_notes.filter((n) => n.kind === 'telephony');
    assert.equal(notes.length, 1, JSON.stringify(notes));
    assert.match(notes[0].text, new RegExp(`^The SIP trunk could not be reached: trunk unreachable: no response from 127\\.0\\.0\\.1:${trunkPort} over udp`));
  });

  for (const [status, scenario] of [
    [401, 'uas-auth-401.xml'],
    [407, 'uas-auth-407.xml'],
  ] as const) {
    test(`a trunk that challenges with ${status} (SIPp): the INVITE is answered with the digest of SIP_TRUNK_USERNAME/PASSWORD, the script runs, the call completes`, async () => {
      const sipp = await startSipp({ scenario: `test/mediaEdge/sipScenarios/${scenario}`, port: trunkPort });
      try {
        const callId = await createPhoneCall();
        assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
        // SIPp checked the answer to its challenge (403 otherwise), took the 200's ACK and our BYE.
        const run = await sipp.done;
        assert.equal(run.code, 0, `SIPp: ${run.output.slice(-1500)}\n${run.errors}`);
        const row = await callRow(app.pool, callId);
        assert.ok(row.conversation.some((t) => t.role === 'agent' && t.text === 'Goodbye.'), JSON.stringify(row.conversation));
        assert.equal(row.system_notes.filter((n) => n.kind === 'telephony').length, 0, JSON.stringify(row.system_notes));
      } finally {
        await sipp.stop();
      }
    });
  }
});
