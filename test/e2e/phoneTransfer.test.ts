// test-runner: foreground (a real-time call through two baresip phones; the tones are timed after the answer)
// A transfer step through the whole stack, in real time, with real telephones
// (/work/shared/recipes/sip-test-phones.md): a call created over HTTP with create-phone-call
// (VOICE_PROVIDER=sip), the real API and call worker, a Temporal dev server and the real media
// edge, whose trunk is baresip A (the caller of the transfer: it auto-answers the agent's call and
// plays a 600 Hz tone from 10 s after its answer, then hangs up). The script transfers by bridge to
// baresip B at its SIP URI (it auto-answers, says a sentence, then plays a 1000 Hz tone): each
// phone's own recording holds the other's tone, so each side heard the other through the edge, and
// B's sentence is in the call's transcript. A target B does not know (404) sends the script to
// on_failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { parseScriptDefinition, type ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';
import { sipCallIdOf } from '../../src/domain/sipOutcomes.js';
import { freeSipPort } from '../support/sipPorts.js';
import { readWav, type PcmAudio } from '../../src/mediaEdge/audio/wav.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { createTestTeam, type TestApi, type TestTeam } from '../support/app.js';
import { BaresipPhone } from '../support/baresip.js';
import { callResultOrStuck, callRow } from '../support/calls.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';

const run = promisify(execFile);
/** The callee (baresip A, the trunk). */
const CALLER = '+14155550181';
/** The person (baresip B). */
const PERSON = '+14155550182';
const CALLER_TONE_HZ = 600;
const PERSON_TONE_HZ = 1000;

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let phoneA: BaresipPhone;
let phoneB: BaresipPhone;
let team: TestTeam;

async function tone(file: string, hz: number, seconds: number, leadingSilence: number): Promise<string> {
  // spawns: sox
  await run('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', file, 'synth', String(seconds), 'sine', String(hz), 'vol', '0.4', 'pad', String(leadingSilence), '0']);
  return file;
}

/**
 * B: a sentence once the legs are joined, then silence (the endpointer's end of the utterance:
 * the transcript's turn), then its tone until it is hung up on (a steady tone is one endless
 * utterance to the endpointer, so it is kept apart from the sentence).
 */
async function personWav(dir: string): Promise<string> {
  const text = path.join(dir, 'desk.txt');
  const said = path.join(dir, 'desk.wav');
  writeFileSync(text, 'Hello, this is the help desk. How can I help you today?');
  // spawns: text2wave
  await run('text2wave', ['-F', '8000', '-eval', '(voice_kal_diphone)', '-o', said, text], { timeout: 20_000 });
  const padded = path.join(dir, 'desk-padded.wav');
  // spawns: sox
  await run('sox', [said, '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', padded, 'pad', '3', '2']);
  const rest = await tone(path.join(dir, 'b2.wav'), PERSON_TONE_HZ, 60, 0);
  const out = path.join(dir, 'b.wav');
  await run('sox', [padded, rest, out]);
  return out;
}

before(async () => {
  stack = await startVoiceStack('phone-transfer', { VOICE_PROVIDER: 'sip', SIP_RING_TIMEOUT_SECONDS: '10' });
  ({ env, app } = stack);
  team = await createTestTeam(app.pool);
  // A: silence while the agent greets, dials B and announces, then its tone; it hangs up when the file ends
  // (25 s after its answer: B's sentence, said about 3 s after B answers, is recognised well before).
  phoneA = await BaresipPhone.start({ accounts: [{ number: CALLER, answer: 'auto' }], audioFile: await tone(path.join(stack.work, 'a.wav'), CALLER_TONE_HZ, 15, 10) });
  phoneB = await BaresipPhone.start({ accounts: [{ number: PERSON, answer: 'auto' }], audioFile: await personWav(stack.work) });
  await stack.startEdge({
    transferRingTimeoutMs: 8_000,
    trunk: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${phoneA.sipPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${await freeSipPort()}`, RTP_PORT_RANGE: '45200-45399' }),
  });
});

after(async () => {
  await stack?.stop([phoneA, phoneB]);
});

async function callWithScript(script: ScriptDefinitionInput): Promise<string> {
  const parsed = parseScriptDefinition(script);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  const { id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: parsed.script.name, definition: parsed.script });
  const res = await app.request('POST', '/api/v1/create-phone-call', {
    key: team.apiKey,
    body: { from_number: team.fromNumber, script_id: scriptId, contact: { phone_number: CALLER, first_name: 'Ada' } },
  });
  assert.equal(res.status, 201, res.text);
  return res.json.call_id as string;
}

const transferTo = (to: string): ScriptDefinitionInput => ({
  name: 'Transfer to the desk',
  // A's silence before its tone is no person's hello: the answer is not screened for a machine.
  voicemail_detection: false,
  steps: [
    { id: 'greet', type: 'say', text: 'Please hold.' },
    { id: 'handoff', type: 'transfer', to, announcement: 'A caller for you.', on_failure: 'sorry' },
    { id: 'sorry', type: 'end', text: 'Sorry, nobody is free.' },
  ],
});

const result = (callId: string) => callResultOrStuck(app.pool, env.client, callId, 90_000);

/** Milliseconds of 20 ms frames of one channel where a tone of `hz` carries most of a clearly audible frame's energy (Goertzel). */
function toneMs(audio: PcmAudio, hz: number, channel = 0): number {
  const frame = Math.round(audio.sampleRate / 50);
  const coefficient = 2 * Math.cos((2 * Math.PI * hz) / audio.sampleRate);
  const frames = Math.floor(audio.samples.length / audio.channels / frame);
  let found = 0;
  for (let f = 0; f < frames; f++) {
    let s1 = 0;
    let s2 = 0;
    let energy = 0;
    for (let i = 0; i < frame; i++) {
      const x = audio.samples[(f * frame + i) * audio.channels + channel] / 32768;
      energy += x * x;
      const s0 = x + coefficient * s1 - s2;
      s2 = s1;
      s1 = s0;
    }
    const power = (s1 * s1 + s2 * s2 - coefficient * s1 * s2) / (frame / 2);
    if (energy / frame > 1e-4 && power / energy > 0.5) found += 20;
  }
  return found;
}

async function waitFor(predicate: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a transfer step on a phone call through the SIP trunk', () => {
  test('bridge to a second phone: each side hears the other through the edge; completed / transferred; B dialled once', async () => {
    const closedB = phoneB.events.filter((e) => e.type === 'CALL_CLOSED').length;
    const callId = await callWithScript(transferTo(phoneB.uri(PERSON)));
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'transferred' });
    const row = await callRow(app.pool, callId);
    const note = row.system_notes.find((n) => n.kind === 'transfer');
    assert.ok(note, `a transfer System Note: ${JSON.stringify(row.system_notes)}`);
    assert.ok(note.text.includes(phoneB.uri(PERSON)), note.text);
    assert.equal((note.data as { ended_by?: string }).ended_by, 'caller', 'A hung up when its file ended');
    // The transcript went on through the bridge: the person's sentence is an agent turn after the script's lines.
    const afterHold = row.conversation.slice(row.conversation.findIndex((t) => t.text === 'Please hold.') + 1);
    assert.ok(afterHold.some((t) => t.role === 'agent' && t.text.trim() !== ''), `the person's words are in the transcript: ${JSON.stringify(row.conversation)}`);
    // B got the edge's BYE once A hung up.
    await waitFor(() => phoneB.events.filter((e) => e.type === 'CALL_CLOSED').length > closedB, "B's call to close (BYE)");
    const offers = phoneB.events.filter((e) => e.type === 'CALL_REMOTE_SDP' && e.param === 'offer').length;
    assert.equal(offers, 1, `B was dialled once: ${JSON.stringify(phoneB.events.map((e) => e.type))}`);
    await phoneA.waitForEvent('CALL_CLOSED', (e) => e.id === sipCallIdOf(callId));
    const heardByA = phoneA.recordings().heard.at(-1);
    const heardByB = phoneB.recordings().heard.at(-1);
    assert.ok(heardByA && heardByB, 'both phones recorded their call');
    const aHeard = toneMs(readWav(readFileSync(heardByA)), PERSON_TONE_HZ);
    const bHeard = toneMs(readWav(readFileSync(heardByB)), CALLER_TONE_HZ);
    assert.ok(aHeard >= 1000, `A heard B's ${PERSON_TONE_HZ} Hz tone for ${aHeard} ms`);
    assert.ok(bHeard >= 1000, `B heard A's ${CALLER_TONE_HZ} Hz tone for ${bHeard} ms`);
    // The call's recording went on through the bridge: the person's tone is on its agent side.
    const stored = path.join(app.config.RECORDINGS_DIR!, recordingKey(team.teamId, callId));
    await waitFor(() => existsSync(stored), 'the recording');
    const recording = readWav(readFileSync(stored));
    const recorded = Math.max(...[0, 1].map((c) => toneMs(recording, PERSON_TONE_HZ, c)));
    assert.ok(recorded >= 1000, `the recording holds ${recorded} ms of the person's tone`);
  });

  test('a person the far end does not know (404): the script goes on at on_failure, and the call ends agent_hangup', async () => {
    const callId = await callWithScript(transferTo(phoneB.uri('+14155550189')));
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    const row = await callRow(app.pool, callId);
    assert.deepEqual(
      row.conversation.filter((t) => t.role === 'agent').map((t) => t.text),
      ['Please hold.', 'Sorry, nobody is free.'],
    );
    const note = row.system_notes.find((n) => n.kind === 'transfer_failed');
    assert.ok(note, JSON.stringify(row.system_notes));
    assert.equal((note.data as { status?: number }).status, 404);
  });
});
