// test-runner: foreground (a real-time call through baresip; its answers are timed after the prompts)
// Outbound phone calls through the whole stack, in real time, with a real telephone: calls
// created over HTTP with create-phone-call (VOICE_PROVIDER=sip), the real API and call worker,
// a Temporal dev server, and the real media edge (startVoiceEdge with its SIP trunk agent, RTP,
// Festival and the offline recognisers) whose trunk is baresip on loopback
// (/work/shared/recipes/sip-test-phones.md): one account auto-answers and plays a
// festival-made WAV (a "yes" timed after the prompt), one rings until CANCEL, and any other
// number is answered 404. The script runs the Auth Check of the callee's "yes" (verified, and
// against a record holding "no", not verified). Every test counts the INVITEs baresip saw for its call: one. The
// script turns the screening for answering machines off (voicemail_detection: false): these
// tests time the callee's answers from the script's start; the screening meets baresip in
// test/e2e/phoneVoicemail.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freeSipPort } from '../support/sipPorts.js';
import { readWav, readWavLayout, toMono } from '../../src/mediaEdge/audio/wav.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { sipCallIdOf } from '../../src/domain/sipOutcomes.js';
import { isTerminalStatus } from '../../src/domain/calls.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { createTestTeam, type TestApi, type TestTeam } from '../support/app.js';
import { BaresipPhone } from '../support/baresip.js';
import { callResultOrStuck, callRow, waitForCall } from '../support/calls.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';

const run = promisify(execFile);
/** Auto-answers and plays the answers WAV; rings until CANCEL; anything else is 404. */
const ANSWERS = '+14155550171';
const RINGS = '+14155550172';
const NO_SUCH = '+14155550173';

/**
 * Greets, asks a yes/no, runs the Auth Check of that answer against `onRecord` (the callee
 * always says "yes"), says whether it verified and ends.
 */
const phoneCheckScript = (onRecord: 'yes' | 'no') => ({
  name: 'Phone check',
  voicemail_detection: false,
  steps: [
    { id: 'greet', type: 'say', text: 'Hello, this is the account line.' },
    { id: 'ask_ok', type: 'ask', question: 'Is this a good time to talk?', variable: 'answers.ok', expect: 'yes_no' },
    { id: 'verify', type: 'tool', tool: 'Auth | Check', settings: { record_array: [onRecord], check_array: ['{{answers.ok}}'], required_match_count: '', exact: 'Yes' } },
    { id: 'route', type: 'branch', cases: [{ when: { variable: 'auth_check.verified', equals: true }, next: 'verified' }], default: 'not_verified' },
    { id: 'verified', type: 'say', text: 'You are verified.', next: 'bye' },
    { id: 'not_verified', type: 'say', text: 'I could not verify you.', next: 'bye' },
    { id: 'bye', type: 'end', text: 'Thank you. Goodbye.' },
  ],
});
const SCRIPT = phoneCheckScript('yes');
/** The same script whose record holds "no": the callee's "yes" is the wrong answer. */
const WRONG_ANSWER_SCRIPT = phoneCheckScript('no');

/** A digits ask answered only on the keypad (docs/scripts.md, "Keyed answers"). */
const KEYPAD_SCRIPT = {
  name: 'Keypad check',
  voicemail_detection: false,
  steps: [
    { id: 'ask_code', type: 'ask', question: 'Please key your four digit code, then the hash key.', variable: 'answers.code', expect: 'digits', input: 'dtmf' },
    { id: 'bye', type: 'end', text: 'Thank you. Goodbye.' },
  ],
};

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let phone: BaresipPhone;
let team: TestTeam;
/** A team whose number the phone refuses (a blocked contact): its calls get 486 Busy Here. */
let blockedTeam: TestTeam;
let scriptId: string;
let blockedScriptId: string;
let keypadScriptId: string;
let wrongAnswerScriptId: string;

/** The callee's microphone: silence, "yes" once the prompt has played (and again for a reprompt), then silence. */
async function answersWav(dir: string): Promise<string> {
  const yes = path.join(dir, 'yes.wav');
  const text = path.join(dir, 'yes.txt');
  writeFileSync(text, 'Yes.');
  // spawns: text2wave
  await run('text2wave', ['-F', '8000', '-eval', '(voice_kal_diphone)', '-o', yes, text], { timeout: 20_000 });
  const first = path.join(dir, 'first.wav');
  const out = path.join(dir, 'answers.wav');
  // spawns: sox
  await run('sox', [yes, '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', first, 'pad', '7', '10']);
  await run('sox', [first, yes, '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', out, 'pad', '0', '40']);
  return out;
}

before(async () => {
  stack = await startVoiceStack('phone-calls', { VOICE_PROVIDER: 'sip', SIP_RING_TIMEOUT_SECONDS: '4' });
  ({ env, app } = stack);
  team = await createTestTeam(app.pool);
  blockedTeam = await createTestTeam(app.pool);
  ({ id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  ({ id: blockedScriptId } = await insertScript(app.pool, { teamId: blockedTeam.teamId, name: SCRIPT.name, definition: SCRIPT }));
  ({ id: keypadScriptId } = await insertScript(app.pool, { teamId: team.teamId, name: KEYPAD_SCRIPT.name, definition: KEYPAD_SCRIPT }));
  ({ id: wrongAnswerScriptId } = await insertScript(app.pool, { teamId: team.teamId, name: WRONG_ANSWER_SCRIPT.name, definition: WRONG_ANSWER_SCRIPT }));
  phone = await BaresipPhone.start({
    accounts: [
      { number: ANSWERS, answer: 'auto' },
      { number: RINGS, answer: 'manual' },
    ],
    audioFile: await answersWav(stack.work),
    busyFor: [`sip:${blockedTeam.fromNumber}@127.0.0.1`],
  });
  await stack.startEdge({
    trunk: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${phone.sipPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${await freeSipPort()}`, RTP_PORT_RANGE: '44600-44799' }),
    // A silent far end ends the call dropout after this long (10 s in production).
    settings: { RTP_INACTIVITY_SECONDS: '3' },
  });
});

after(async () => {
  await stack?.stop([phone]);
});

async function createPhoneCall(to: string, from: { team: TestTeam; scriptId: string } = { team, scriptId }): Promise<string> {
  const res = await app.request('POST', '/api/v1/create-phone-call', {
    key: from.team.apiKey,
    body: { from_number: from.team.fromNumber, script_id: from.scriptId, contact: { phone_number: to, first_name: 'Ada' } },
  });
  assert.equal(res.status, 201, res.text);
  return res.json.call_id as string;
}

const result = (callId: string) => callResultOrStuck(app.pool, env.client, callId, 90_000);

/** The call as get-call-result returns it. */
async function callResult(callId: string): Promise<{ transcript_json: { role: string; text: string }[]; system_notes: { kind: string; data?: Record<string, any> }[] }> {
  const res = await app.request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
  assert.equal(res.status, 200, res.text);
  return res.json.call;
}
/** The Auth Check's variables in get-call-result (its System Note). */
const authCheckOf = async (callId: string) => (await callResult(callId)).system_notes.find((n) => n.kind === 'auth_check')?.data?.variables;
/**
 * INVITEs that reached baresip for the call, by the SIP Call-ID derived from the call id: an
 * auto-answering account reports each offer it takes (CALL_REMOTE_SDP offer), a ringing one
 * each incoming call (CALL_INCOMING).
 */
const invitesOf = (callId: string) =>
  phone.events.filter((e) => e.id === sipCallIdOf(callId) && (e.type === 'CALL_INCOMING' || (e.type === 'CALL_REMOTE_SDP' && e.param === 'offer'))).length;

/** Milliseconds of 20 ms frames louder than -40 dBFS in a mono 8 kHz WAV. */
function voicedMs(file: string): number {
  const samples = toMono(readWav(readFileSync(file)));
  let voiced = 0;
  for (let i = 0; i + 160 <= samples.length; i += 160) {
    let sum = 0;
    for (let j = i; j < i + 160; j++) sum += samples[j] * samples[j];
    if (Math.sqrt(sum / 160) > 32768 * 0.01) voiced += 20;
  }
  return voiced;
}

describe('outbound phone calls to baresip through the SIP trunk', () => {
  test('the callee answers: the script runs, its "yes" is recognised, the Auth Check verifies it, the call completes with a stereo recording, and baresip heard the agent', async () => {
    const callId = await createPhoneCall(ANSWERS);
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    assert.equal(invitesOf(callId), 1, `one INVITE; events ${JSON.stringify(phone.events)}`);
    assert.equal(phone.events.find((e) => e.id === sipCallIdOf(callId))?.peeruri, `sip:${team.fromNumber}@127.0.0.1`, 'From is the team’s number');
    const row = await callRow(app.pool, callId);
    assert.equal(row.provider, 'sip');
    const turns = row.conversation.map((t) => `${t.role}: ${t.text}`);
    assert.ok(turns.includes('agent: Hello, this is the account line.'), turns.join(' | '));
    assert.ok(row.conversation.some((t) => t.role === 'user' && /\byes\b/i.test(t.text)), `the callee's yes is heard: ${turns.join(' | ')}`);
    const auth = await authCheckOf(callId);
    assert.equal(auth?.verified, true, JSON.stringify(auth));
    assert.equal(auth?.status, 'verified');
    assert.equal(auth?.matched_count, 1);
    assert.ok(turns.includes('agent: You are verified.'), `the script took the verified branch: ${turns.join(' | ')}`);
    const stored = path.join(app.config.RECORDINGS_DIR!, recordingKey(team.teamId, callId));
    for (let i = 0; i < 50 && !existsSync(stored); i++) await new Promise((r) => setTimeout(r, 100));
    const layout = readWavLayout(readFileSync(stored));
    assert.equal(layout?.channels, 2, 'the recording is stereo (callee and agent)');
    await phone.waitForEvent('CALL_CLOSED', () => true);
    const heard = phone.recordings().heard.at(-1);
    assert.ok(heard, 'baresip recorded the call');
    // Greeting, question and goodbye: several seconds of the agent's voice.
    const ms = voicedMs(heard);
    assert.ok(ms > 2500 && ms < 20_000, `baresip heard ${ms} ms of the agent's speech`);
  });

  test('a wrong answer (the callee says yes, the record holds no): the Auth Check is not verified in get-call-result, the script says so, and the call completes', async () => {
    const callId = await createPhoneCall(ANSWERS, { team, scriptId: wrongAnswerScriptId });
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    const auth = await authCheckOf(callId);
    assert.equal(auth?.verified, false, JSON.stringify(auth));
    assert.equal(auth?.status, 'failed');
    assert.equal(auth?.matched_count, 0);
    const call = await callResult(callId);
    assert.ok(call.transcript_json.some((t) => t.role === 'user' && /\byes\b/i.test(t.text)), JSON.stringify(call.transcript_json));
    assert.ok(call.transcript_json.some((t) => t.role === 'agent' && t.text === 'I could not verify you.'), JSON.stringify(call.transcript_json));
  });

  test('nobody answers within the ring timeout: CANCEL reaches the phone, and the call ends rang-out / no_answer', async () => {
    const closed = phone.events.filter((e) => e.type === 'CALL_CLOSED').length;
    const callId = await createPhoneCall(RINGS);
    assert.deepEqual(await result(callId), { callId, status: 'rang-out', endReason: 'no_answer' });
    assert.equal(invitesOf(callId), 1, 'one INVITE');
    await waitUntil(() => phone.events.filter((e) => e.type === 'CALL_CLOSED').length > closed, 'the ringing phone stopped (CANCEL)');
  });

  test('the callee is busy (486): User rejected / busy', async () => {
    const callId = await createPhoneCall(ANSWERS, { team: blockedTeam, scriptId: blockedScriptId });
    assert.deepEqual(await result(callId), { callId, status: 'User rejected', endReason: 'busy' });
    // A refused call is one CALL_CLOSED at baresip (no offer taken): one INVITE, refused once.
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === sipCallIdOf(callId));
    assert.deepEqual(
      phone.events.filter((e) => e.id === sipCallIdOf(callId)).map((e) => e.type),
      ['CALL_CLOSED'],
    );
  });

  test('a number the far end does not know (404) ends failed / invalid_number', async () => {
    const callId = await createPhoneCall(NO_SUCH);
    assert.deepEqual(await result(callId), { callId, status: 'failed', endReason: 'invalid_number' });
  });

  test('cancel-call while the phone rings sends CANCEL, and the call ends cancelled', async () => {
    const callId = await createPhoneCall(RINGS);
    await waitForCall(app.pool, callId, (c) => c.progress === 'ringing', 30_000);
    const closed = phone.events.filter((e) => e.type === 'CALL_CLOSED').length;
    const res = await app.request('POST', `/api/v1/cancel-call/${callId}`, { key: team.apiKey });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(await result(callId), { callId, status: 'cancelled', endReason: 'cancelled' });
    await waitUntil(() => phone.events.filter((e) => e.type === 'CALL_CLOSED').length > closed, 'the ringing phone stopped (CANCEL)');
    assert.equal(invitesOf(callId), 1, 'one INVITE');
  });

  test('the callee hangs up mid-call (BYE): hang-up / User Hangup', async () => {
    const callId = await createPhoneCall(ANSWERS);
    await waitForCall(app.pool, callId, (c) => c.progress === 'in_conversation', 30_000);
    await phone.hangup(ANSWERS);
    assert.deepEqual(await result(callId), { callId, status: 'hang-up', endReason: 'User Hangup' });
  });

  test('cancel-call in progress sends BYE, and the call ends cancelled', async () => {
    const callId = await createPhoneCall(ANSWERS);
    await waitForCall(app.pool, callId, (c) => c.progress === 'in_conversation', 30_000);
    const closed = phone.events.filter((e) => e.type === 'CALL_CLOSED').length;
    const res = await app.request('POST', `/api/v1/cancel-call/${callId}`, { key: team.apiKey });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(await result(callId), { callId, status: 'cancelled', endReason: 'cancelled' });
    await waitUntil(() => phone.events.filter((e) => e.type === 'CALL_CLOSED').length > closed, 'the phone got the BYE');
  });

  test('the callee keys digits on the phone (baresip’s RFC 4733 events): they answer a digits ask, as the user’s turn with a keyed note', async () => {
    const callId = await createPhoneCall(ANSWERS, { team, scriptId: keypadScriptId });
    const asks = async () => {
      const history = await env.client.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
      return (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'askCaller').length;
    };
    // The edge hears keys once its ask has begun: the keys go a second after each ask is
    // scheduled, inside its prompt (an ask that missed them times out and is asked once more).
    let keyed = 0;
    for (let i = 0; i < 600 && !isTerminalStatus((await callRow(app.pool, callId)).status); i++) {
      if ((await asks()) > keyed) {
        keyed += 1;
        await new Promise((r) => setTimeout(r, 1000));
        await phone.select(ANSWERS);
        await phone.command('/sndcode 4071#');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    const row = await callRow(app.pool, callId);
    assert.ok(row.conversation.some((t) => t.role === 'user' && t.text === '4071'), `the keyed code is the callee's answer: ${JSON.stringify(row.conversation)}`);
    assert.ok(row.system_notes.some((n) => n.kind === 'keyed_answer'), JSON.stringify(row.system_notes));
  });

  test('RTP that stops (the phone frozen) ends the call dropout / connection_lost', async () => {
    const callId = await createPhoneCall(ANSWERS);
    await waitForCall(app.pool, callId, (c) => c.progress === 'in_conversation', 30_000);
    phone.freeze();
    try {
      assert.deepEqual(await result(callId), { callId, status: 'dropout', endReason: 'connection_lost' });
    } finally {
      phone.thaw();
    }
  });
});

async function waitUntil(predicate: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}; baresip events ${phone.events.map((e) => e.type).join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
