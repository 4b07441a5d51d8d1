// Voicemail on an outbound phone call through the whole stack, in real time, with a real
// telephone (docs/telephony.md, "Voicemail detection"): create-phone-call over HTTP
// (VOICE_PROVIDER=sip), the real API and call worker, a Temporal dev server, and the real media
// edge (its SIP trunk agent, RTP, Festival) whose trunk is baresip on loopback. baresip answers
// as an answering machine: its microphone plays a festival-made greeting, a 1 kHz beep made
// with sox, then silence (and it records what it hears). The edge screens the answer, takes it
// for a machine, waits for the beep to end, says the script's voicemail message and hangs up.
// A second account of the same phone answers as a person ("Hello?", then silence): the script runs.
// It runs in a lane: what it asserts is placed in the audio's own time (where the beep ends,
// where the agent's voice begins in baresip's recording), not in wall-clock time.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { sipCallIdOf } from '../../src/domain/sipOutcomes.js';
import { freeSipPort } from '../support/sipPorts.js';
import { readWav, readWavLayout, toMono } from '../../src/mediaEdge/audio/wav.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { createTestTeam, type TestApi, type TestTeam } from '../support/app.js';
import { BaresipPhone } from '../support/baresip.js';
import { callResultOrStuck, callRow } from '../support/calls.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';

const run = promisify(execFile);
const MACHINE = '+14155550181';
const PERSON = '+14155550182';
const SCRIPT = {
  name: 'Reminder',
  voicemail_message: 'Hello {{contact.first_name}}, this is the account line. Please call us back today.',
  steps: [
    { id: 'greet', type: 'say', text: 'Hello, this is the account line.' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let phone: BaresipPhone;
let team: TestTeam;
let scriptId: string;
/** Where the beep ends in the machine's microphone, ms from the answer. */
let beepEndsAtMs: number;
/** Where the person's "Hello?" ends, ms from the answer. */
let helloEndsAtMs: number;

/** The answering machine's microphone: 0.3 s of silence, the greeting, 0.4 s, a 0.5 s beep at 1 kHz, then 25 s of silence. */
async function machineWav(dir: string): Promise<{ file: string; beepEndsAtMs: number }> {
  const text = path.join(dir, 'greeting.txt');
  const greeting = path.join(dir, 'greeting.wav');
  writeFileSync(text, "Hi, you have reached Lisa. I can't take your call right now. Please leave a message after the beep.");
  // spawns: text2wave
  await run('text2wave', ['-F', '8000', '-eval', '(voice_kal_diphone)', '-o', greeting, text], { timeout: 20_000 });
  const pcm = ['-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer'];
  const padded = path.join(dir, 'padded.wav');
  const beep = path.join(dir, 'beep.wav');
  const file = path.join(dir, 'machine.wav');
  // spawns: sox
  await run('sox', [greeting, ...pcm, padded, 'pad', '0.3', '0.4']);
  await run('sox', ['-n', ...pcm, beep, 'synth', '0.5', 'sine', '1000', 'vol', '0.5']);
  await run('sox', [padded, beep, ...pcm, file, 'pad', '0', '25']);
  const greetingMs = (toMono(readWav(readFileSync(padded))).length / 8000) * 1000;
  return { file, beepEndsAtMs: greetingMs + 500 };
}

/** A person's microphone: "Hello?" after 0.3 s, then 25 s of silence (waiting for the caller). */
async function personWav(dir: string): Promise<{ file: string; helloEndsAtMs: number }> {
  const text = path.join(dir, 'hello.txt');
  const hello = path.join(dir, 'hello.wav');
  const file = path.join(dir, 'person.wav');
  writeFileSync(text, 'Hello?');
  // spawns: text2wave
  await run('text2wave', ['-F', '8000', '-eval', '(voice_kal_diphone)', '-o', hello, text], { timeout: 20_000 });
  const helloMs = (toMono(readWav(readFileSync(hello))).length / 8000) * 1000;
  // spawns: sox
  await run('sox', [hello, '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', file, 'pad', '0.3', '25']);
  return { file, helloEndsAtMs: 300 + helloMs };
}

before(async () => {
  stack = await startVoiceStack('phone-voicemail', { VOICE_PROVIDER: 'sip', SIP_RING_TIMEOUT_SECONDS: '4' });
  ({ env, app } = stack);
  team = await createTestTeam(app.pool);
  ({ id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  const machine = await machineWav(stack.work);
  beepEndsAtMs = machine.beepEndsAtMs;
  const hello = await personWav(stack.work);
  helloEndsAtMs = hello.helloEndsAtMs;
  phone = await BaresipPhone.start({
    accounts: [
      { number: MACHINE, answer: 'auto', audioFile: machine.file },
      { number: PERSON, answer: 'auto', audioFile: hello.file },
    ],
  });
  await stack.startEdge({
    trunk: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${phone.sipPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${await freeSipPort()}`, RTP_PORT_RANGE: '44800-44839' }),
  });
});

after(async () => {
  await stack?.stop([phone]);
});

/** The 20 ms frames of a mono WAV louder than -40 dBFS: [start ms] of each. */
function voicedFrames(samples: Int16Array, rate: number): number[] {
  const frame = (rate * 20) / 1000;
  const voiced: number[] = [];
  for (let i = 0; i + frame <= samples.length; i += frame) {
    let sum = 0;
    for (let j = i; j < i + frame; j++) sum += samples[j] * samples[j];
    if (Math.sqrt(sum / frame) > 32768 * 0.01) voiced.push((i / rate) * 1000);
  }
  return voiced;
}

async function createPhoneCall(to: string): Promise<string> {
  const res = await app.request('POST', '/api/v1/create-phone-call', {
    key: team.apiKey,
    body: { from_number: team.fromNumber, script_id: scriptId, contact: { phone_number: to, first_name: 'Ada' } },
  });
  assert.equal(res.status, 201, res.text);
  return res.json.call_id as string;
}

describe('the answer of an outbound phone call is screened for an answering machine', () => {
  test('a person says "Hello?": the script runs after it, and the call completes with no voicemail note', async () => {
    const callId = await createPhoneCall(PERSON);
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 60_000), { callId, status: 'completed', endReason: 'agent_hangup' });
    const row = await callRow(app.pool, callId);
    assert.deepEqual(
      row.conversation.map((t) => `${t.role}: ${t.text}`),
      ['agent: Hello, this is the account line.', 'agent: Goodbye.'],
    );
    assert.ok(row.system_notes.every((n) => n.kind !== 'voicemail_detection'), JSON.stringify(row.system_notes));
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === sipCallIdOf(callId));
    const heard = phone.recordings().heard.at(-1);
    assert.ok(heard, 'baresip recorded the call');
    const voiced = voicedFrames(toMono(readWav(readFileSync(heard))), 8000);
    assert.ok(voiced.length * 20 > 1500, `baresip heard ${voiced.length * 20} ms of the agent's voice`);
    assert.ok(voiced[0] >= helloEndsAtMs, `the agent spoke ${voiced[0]} ms after the answer, over the person's "Hello?" (it ended at ${helloEndsAtMs} ms)`);
  });

  test('an answering machine: its greeting and beep make the call voicemail, the message after the beep, BYE, the message in the transcript and both recordings', async () => {
    const callId = await createPhoneCall(MACHINE);
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 60_000), { callId, status: 'voicemail', endReason: 'voicemail' });

    const message = 'Hello Ada, this is the account line. Please call us back today.';
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.conversation, [{ role: 'agent', text: message }], 'the message is the only turn: nothing of the script was said');
    const note = row.system_notes.find((n) => n.kind === 'voicemail_detection');
    assert.ok(note, JSON.stringify(row.system_notes));
    const data = note.data as { detection: { verdict: string }; message: { cue: string; startedAtMs: number } };
    assert.equal(data.detection.verdict, 'machine');
    assert.equal(data.message.cue, 'beep', note.text);
    assert.ok(data.message.startedAtMs >= beepEndsAtMs, `the message began ${data.message.startedAtMs} ms after the answer, the beep ended at ${beepEndsAtMs} ms`);
    assert.equal(phone.events.filter((e) => e.id === sipCallIdOf(callId) && e.type === 'CALL_REMOTE_SDP' && e.param === 'offer').length, 1, 'one INVITE');

    // The agent hung up (BYE): the machine's call closed long before its 25 s of silence ran out.
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === sipCallIdOf(callId));
    const heard = phone.recordings().heard.at(-1);
    assert.ok(heard, 'baresip recorded the call');
    const voiced = voicedFrames(toMono(readWav(readFileSync(heard))), 8000);
    // Nothing was said over the greeting; the message (several seconds of speech) came after the beep.
    assert.ok(voiced.length * 20 > 2000, `baresip heard ${voiced.length * 20} ms of the agent's voice`);
    assert.ok(voiced[0] >= beepEndsAtMs, `the agent's first sound reached baresip ${voiced[0]} ms after the answer, before the beep ended at ${beepEndsAtMs} ms`);

    const stored = path.join(app.config.RECORDINGS_DIR!, recordingKey(team.teamId, callId));
    for (let i = 0; i < 50 && !existsSync(stored); i++) await new Promise((r) => setTimeout(r, 100));
    const bytes = readFileSync(stored);
    assert.equal(readWavLayout(bytes)?.channels, 2, 'the call recording is stereo');
    const stereo = readWav(bytes);
    const agent = Int16Array.from({ length: Math.floor(stereo.samples.length / 2) }, (_, i) => stereo.samples[2 * i + 1]);
    assert.ok(voicedFrames(agent, stereo.sampleRate).length * 20 > 2000, "the call recording's agent track holds the message");
  });
});
