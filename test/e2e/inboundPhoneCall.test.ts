// An inbound phone call through the whole stack, in real time (docs/telephony.md, "Inbound
// calls"): a baresip phone dials the team's number through the media edge's SIP trunk agent
// (the "trunk" is loopback), the real API takes the call, the call worker runs its workflow
// on a Temporal dev server, and the real media edge (startVoiceEdge with a trunk: G.711 RTP,
// Festival) speaks the number's inbound script to the caller, then hangs up. An unknown
// number gets 404; a team at its ceiling gets 486 and no call row.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freePort } from '../../src/localPorts.js';
import { freeSipPort } from '../support/sipPorts.js';
import { addTeamNumber } from '../../src/services/phoneNumbers.js';
import { BaresipPhone } from '../support/baresip.js';
import { createTestTeam, type TestApi } from '../support/app.js';
import { callResultOrStuck, waitForCall } from '../support/calls.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';

const CALLER = '+12125550187';
const NUMBER = '+13125550142';

const RECEPTION = {
  name: 'Reception',
  steps: [
    { id: 'greet', type: 'say', text: 'Thank you for calling the test line.' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let phone: BaresipPhone;
let sipPort: number;

before(async () => {
  const wsUrl = `ws://127.0.0.1:${await freePort()}/ws`;
  stack = await startVoiceStack('inbound-e2e', { MEDIA_EDGE_WS_URL: wsUrl, MEDIA_EDGE_SIP_DOMAIN: 'edge.inbound.test' });
  ({ env, app } = stack);
  phone = await BaresipPhone.start({ accounts: [{ number: CALLER, answer: 'auto' }] });
  sipPort = await freeSipPort();
  await stack.startEdge({
    settings: { MEDIA_EDGE_SIP_DOMAIN: 'edge.inbound.test' },
    trunk: {
      trunk: { uri: `sip:127.0.0.1:${phone.sipPort};transport=udp`, host: '127.0.0.1', port: phone.sipPort, transport: 'udp' },
      listen: { host: '127.0.0.1', port: sipPort },
      publicAddress: { host: '127.0.0.1', port: sipPort },
      rtpPortRange: { min: 43000, max: 43999 },
      allowedSources: ['127.0.0.1'],
    },
  });
});

after(async () => {
  await stack?.stop([phone]);
});

/** Dials `number` at the edge; the phone's next CALL_ESTABLISHED or CALL_CLOSED. */
async function dial(number: string) {
  const from = phone.events.length;
  await phone.dial(`sip:${number}@127.0.0.1:${sipPort}`, CALLER);
  return Promise.race([
    phone.waitForEvent('CALL_ESTABLISHED', (e) => phone.events.indexOf(e) >= from, 30_000),
    phone.waitForEvent('CALL_CLOSED', (e) => phone.events.indexOf(e) >= from, 30_000),
  ]);
}

describe('an inbound phone call from baresip through the whole stack', () => {
  test('a number with an inbound script: answered, the script spoken, the agent hangs up; completed / agent_hangup as type inbound with a recording', async () => {
    const team = await createTestTeam(app.pool);
    const script = await insertScript(app.pool, { teamId: team.teamId, name: RECEPTION.name, definition: RECEPTION });
    await addTeamNumber(app.pool, { teamId: team.teamId, phoneNumber: NUMBER, inboundScriptId: script.id });
    const established = await dial(NUMBER);
    assert.equal(established.type, 'CALL_ESTABLISHED', JSON.stringify(established));
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === established.id, 60_000);
    const { rows } = await app.pool.query<{ id: string }>('SELECT id FROM calls WHERE to_number = $1', [NUMBER]);
    assert.equal(rows.length, 1);
    const callId = rows[0].id;
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 60_000), { callId, status: 'completed', endReason: 'agent_hangup' });
    const call = await waitForCall(app.pool, callId, (c) => c.analysed_at !== null, 30_000);
    assert.equal(call.type, 'inbound');
    assert.equal(call.from_number, CALLER);
    assert.deepEqual(call.conversation.map((t) => t.text), ['Thank you for calling the test line.', 'Goodbye.']);
    const result = await app.request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
    assert.equal(result.json.call.type, 'inbound');
    assert.ok(result.json.call.recording_url, 'a recording');
    const heard = phone.recordings().heard;
    assert.ok(heard.length > 0 && statSync(heard[heard.length - 1]).size > 8000 * 2, 'baresip heard the agent');
  });

  test('an unknown number: 404 at the phone', async () => {
    const closed = await dial('+13125550999');
    assert.equal(closed.type, 'CALL_CLOSED');
    assert.match(String(closed.param), /404/);
  });
});
