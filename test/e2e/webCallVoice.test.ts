// test-runner: foreground (a real-time call through headless Chromium: its fake microphone and the edge's Whisper need the CPU when they want it; in a lane at load, 3 word errors of 10 once)
// A browser call by voice through the whole stack, in real time: the example page
// (examples/web-call, JsSIP) in Debian's headless Chromium, the real API and call worker,
// a Temporal dev server, and the real media edge (startVoiceEdge: SIP over WebSocket,
// WebRTC with Opus, Festival and pocketsphinx, recordings into the local store the API
// reads). The page's microphone is a WebAudio stream the test speaks festival-made answers
// into once each prompt has played; the agent's audio arriving in the page is measured
// with an AnalyserNode. Latency is not asserted here (bench/voiceTurns.ts measures it).
// One call runs with Whisper and the Silero endpointer (the edge's engines are switched for
// it; the rest of the set-up is shared), answering a free-text question.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { type Browser, type Page } from 'playwright-core';
import { startExampleServer, type ExampleServer } from '../../examples/web-call/server.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { parseScriptDefinition } from '../../src/domain/scripts/definition.js';
import { readWav, writeWav } from '../../src/mediaEdge/audio/wav.js';
import { createEndpointing, type Endpointing } from '../../src/mediaEdge/audio/endpointingConfig.js';
import { VoiceEndpointer } from '../../src/mediaEdge/audio/voiceEndpointing.js';
import { createSpeechEngines, type SpeechEngines } from '../../src/mediaEdge/speech/speechEngines.js';
import type { WhisperRecognizer } from '../../src/mediaEdge/speech/whisper.js';
import type { VoiceEdge } from '../../src/mediaEdge/voiceEdge.js';
import { linkObjectsToContact } from '../../src/services/objects.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { wordErrors } from '../../bench/speechAccuracy/scoring.js';
import { createTestTeam, type TestApi, type TestTeam } from '../support/app.js';
import { callResultOrStuck } from '../support/calls.js';
import { spoken } from '../support/spokenAudio.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';
import { FAKE_MEDIA_ARGS, launchChromium } from '../support/chromium.js';

const ACCOUNT_PIN = '2946';

/** Greets, asks for the account number (digits) and a yes/no, checks both, branches, ends. */
const SCRIPT = {
  name: 'Voice verification',
  steps: [
    { id: 'greet', type: 'say', text: 'Hello, this is the account line.' },
    { id: 'ask_pin', type: 'ask', question: 'Please say your account number, one digit at a time.', variable: 'answers.pin', expect: 'digits' },
    { id: 'ask_holder', type: 'ask', question: 'Are you the account holder?', variable: 'answers.holder', expect: 'yes_no' },
    {
      id: 'verify',
      type: 'tool',
      tool: 'Auth | Check',
      settings: { record_array: ['{{objects.account.pin}}', 'yes'], check_array: ['{{answers.pin}}', '{{answers.holder}}'], required_match_count: '', exact: 'Yes' },
    },
    { id: 'route', type: 'branch', cases: [{ when: { variable: 'auth_check.verified', equals: true }, next: 'verified' }], default: 'not_verified' },
    { id: 'verified', type: 'say', text: 'Thank you, you are verified.' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
    { id: 'not_verified', type: 'ask', question: 'I could not verify you. Would you like a call back?', variable: 'answers.callback', expect: 'yes_no', next: 'bye' },
  ],
};

const SPOKEN_REASON = 'I would like to book an appointment for next week.';

/** Asks one free-text question, thanks and ends: the call that runs with Whisper and Silero. */
const FREE_TEXT_SCRIPT = {
  name: 'Voice reason',
  steps: [
    { id: 'ask_reason', type: 'ask', question: 'What is the reason for your call?', variable: 'answers.reason', expect: 'text' },
    { id: 'bye', type: 'end', text: 'Thank you. Goodbye.' },
  ],
};

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let speech: SpeechEngines;
let edge: VoiceEdge;
let team: TestTeam;
let example: ExampleServer;
let freeTextExample: ExampleServer;
let browser: Browser;
/**
 * The engines and endpointing the edge gives its next call: the defaults (Festival,
 * pocketsphinx, energy), or Whisper and Silero while the test that runs them sets these.
 */
let whisperSpeech: SpeechEngines | undefined;
let sileroEndpointing: Endpointing | undefined;
const energyEndpointing = createEndpointing({});
const edgeSpeech: SpeechEngines = {
  get synthesizer() {
    return (whisperSpeech ?? speech).synthesizer;
  },
  get recognizer() {
    return (whisperSpeech ?? speech).recognizer;
  },
  get recognizers() {
    return (whisperSpeech ?? speech).recognizers;
  },
  forCall: (onFailover, options) => (whisperSpeech ?? speech).forCall(onFailover, options),
  warmUp: () => speech.warmUp(),
  close: () => speech.close(),
};
const edgeEndpointing: Endpointing = {
  get kind() {
    return (sileroEndpointing ?? energyEndpointing).kind;
  },
  get settings() {
    return (sileroEndpointing ?? energyEndpointing).settings;
  },
  get echoMarginDb() {
    return (sileroEndpointing ?? energyEndpointing).echoMarginDb;
  },
  get energySettings() {
    return (sileroEndpointing ?? energyEndpointing).energySettings;
  },
  create: () => (sileroEndpointing ?? energyEndpointing).create(),
  warmUp: () => energyEndpointing.warmUp(),
  close: () => energyEndpointing.close(),
};

before(async () => {
  stack = await startVoiceStack('web-call-voice', {}, { webCallDomain: 'edge.voice.test' });
  ({ env, app } = stack);
  speech = createSpeechEngines({});
  // The stack closes them (edgeSpeech closes `speech`).
  edge = await stack.startEdge({ speech: edgeSpeech, endpointing: edgeEndpointing });

  team = await createTestTeam(app.pool);
  const script = parseScriptDefinition(SCRIPT);
  assert.ok(script.ok, script.ok ? '' : script.message);
  const { id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT });
  const type = await app.request('POST', '/api/v1/object-types', { key: team.apiKey, body: { type_name: 'account', schema: { pin: 'string' }, unique_by_contact: true } });
  assert.equal(type.status, 201, type.text);
  const contact = await app.request('POST', '/api/v1/create-contact', { key: team.apiKey, body: { phone_number: '+14155550142', first_name: 'Ada', last_name: 'Voice' } });
  assert.equal(contact.status, 201, contact.text);
  await linkObjectsToContact(app.pool, team.teamId, contact.json.contact_id, { account: { pin: ACCOUNT_PIN } });
  example = await startExampleServer({ apiUrl: app.url, apiKey: team.apiKey, scriptId, contactId: contact.json.contact_id, port: 0, iceServers: [] });
  assert.ok(parseScriptDefinition(FREE_TEXT_SCRIPT).ok);
  const freeText = await insertScript(app.pool, { teamId: team.teamId, name: FREE_TEXT_SCRIPT.name, definition: FREE_TEXT_SCRIPT });
  freeTextExample = await startExampleServer({ apiUrl: app.url, apiKey: team.apiKey, scriptId: freeText.id, port: 0, iceServers: [] });
  browser = await launchChromium([...FAKE_MEDIA_ARGS, '--autoplay-policy=no-user-gesture-required']);
});

after(async () => {
  await browser?.close();
  await example?.close();
  await freeTextExample?.close();
  await stack?.stop();
});

/**
 * Runs in the page before its scripts (plain JavaScript: a compiled function would carry
 * the compiler's helpers). The microphone is a WebAudio stream `__speak(base64 wav)` plays
 * into; the remote track of every peer connection feeds an analyser whose RMS is sampled
 * every 20 ms into `__levels` as [epoch ms, rms]. `__pcs` are the peer connections.
 */
const PAGE_AUDIO = `(() => {
  const ctx = new AudioContext({ sampleRate: 48000 });
  const microphone = ctx.createMediaStreamDestination();
  // A source that is always connected keeps the destination rendering (and the browser
  // sending RTP) between answers; alone it is silence.
  const line = ctx.createConstantSource();
  line.offset.value = 0;
  line.connect(microphone);
  line.start();
  const levels = [];
  const pcs = [];
  Object.assign(window, { __levels: levels, __ctx: ctx, __pcs: pcs });
  window.__speak = async (base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const buffer = await ctx.decodeAudioData(bytes.buffer);
    const source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(microphone);
    const started = Date.now();
    await new Promise((resolve) => {
      source.onended = resolve;
      source.start();
    });
    return { started, ended: Date.now() };
  };
  navigator.mediaDevices.getUserMedia = async () => {
    await ctx.resume();
    return microphone.stream;
  };
  const watch = (track) => {
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 1024;
    ctx.createMediaStreamSource(new MediaStream([track])).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    setInterval(() => {
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += s * s;
      levels.push([Date.now(), Math.sqrt(sum / samples.length)]);
    }, 20);
  };
  const Native = window.RTCPeerConnection;
  window.RTCPeerConnection = class extends Native {
    constructor(config) {
      super(config);
      pcs.push(this);
      this.addEventListener('track', (event) => watch(event.track));
    }
  };
})();`;

/** RMS of the agent's audio in the page (full scale 1) above which it speaks, and below which it is quiet. */
const LOUD = 0.01;
const QUIET = 0.003;
/** Quiet this long after speech = the prompt has ended (longer than the pauses inside a sentence). */
const PROMPT_END_QUIET_MS = 700;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function levels(page: Page): Promise<[number, number][]> {
  return page.evaluate(() => (window as unknown as { __levels: [number, number][] }).__levels.slice());
}

/** The loudest agent audio the page received in [from, to). */
function peak(samples: [number, number][], from: number, to = Infinity): number {
  return samples.filter(([at]) => at >= from && at < to).reduce((max, [, level]) => Math.max(max, level), 0);
}

interface PendingAsk {
  scheduledEventId: string;
  stepId: string;
  prompt: string;
  scheduledAt: number;
}

/** The askCaller activity the call workflow is waiting on now, from its history, if any. */
async function pendingAsk(handle: WorkflowHandle): Promise<PendingAsk | undefined> {
  const events = (await handle.fetchHistory()).events ?? [];
  const closed = new Set<string>();
  for (const e of events) {
    const attrs =
      e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCanceledEventAttributes;
    if (attrs?.scheduledEventId) closed.add(String(attrs.scheduledEventId));
  }
  for (const e of [...events].reverse()) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== 'askCaller' || closed.has(String(e.eventId))) continue;
    const input = defaultPayloadConverter.fromPayload<{ stepId: string; prompt: string }>(scheduled.input!.payloads![0]);
    const time = e.eventTime!;
    return { scheduledEventId: String(e.eventId), stepId: input.stepId, prompt: input.prompt, scheduledAt: Number(time.seconds) * 1000 + Math.floor((time.nanos ?? 0) / 1e6) };
  }
  return undefined;
}

/**
 * Waits for the next askCaller and for its prompt to have played in the page (loud, then
 * quiet for PROMPT_END_QUIET_MS); answers the step id and the prompt's peak level.
 */
async function awaitPromptPlayed(page: Page, handle: WorkflowHandle, answered: Set<string>, timeoutMs = 30_000): Promise<{ ask: PendingAsk; peakLevel: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ask = await pendingAsk(handle);
    if (Date.now() > deadline) assert.fail(`no prompt played within ${timeoutMs} ms (pending: ${ask?.stepId ?? 'none'}): ${await pageDiagnosis(page)}`);
    if (ask && !answered.has(ask.scheduledEventId)) {
      const samples = (await levels(page)).filter(([at]) => at >= ask.scheduledAt);
      const spoke = samples.some(([, level]) => level > LOUD);
      const lastSound = samples.filter(([, level]) => level >= QUIET).at(-1)?.[0];
      const now = samples.at(-1)?.[0] ?? 0;
      if (spoke && lastSound !== undefined && now - lastSound >= PROMPT_END_QUIET_MS) return { ask, peakLevel: peak(samples, ask.scheduledAt) };
    }
    await sleep(100);
  }
}

/** What the page's audio and peer connection did, for failure messages. */
async function pageDiagnosis(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const w = window as unknown as { __levels: [number, number][]; __ctx: AudioContext; __pcs: RTCPeerConnection[] };
    const stats = [];
    for (const pc of w.__pcs) {
      for (const s of (await pc.getStats()).values()) if (s.type === 'inbound-rtp' || s.type === 'outbound-rtp') stats.push({ type: s.type, packets: s.packetsReceived ?? s.packetsSent, energy: s.totalAudioEnergy });
    }
    const levels = w.__levels;
    return JSON.stringify({ audioContext: w.__ctx.state, levels: levels.length, loudest: Math.max(0, ...levels.map(([, l]) => l)), rtp: stats });
  });
}

/** Festival's `text` as a WAV the page can decode. */
async function answerWav(text: string): Promise<string> {
  const samples = await spoken(text);
  return writeWav({ sampleRate: 16_000, channels: 1, samples }).toString('base64');
}

async function speakInPage(page: Page, text: string): Promise<void> {
  const wav = await answerWav(text);
  await page.evaluate((b64) => (window as unknown as { __speak(b: string): Promise<unknown> }).__speak(b64), wav);
}

/** Opens the example page with the audio hooks, clicks Start call, and returns the new web call's workflow. */
async function startCall(server: ExampleServer = example): Promise<{ page: Page; callId: string; handle: WorkflowHandle }> {
  const before = new Set((await app.pool.query<{ id: string }>('SELECT id FROM calls WHERE team_id = $1', [team.teamId])).rows.map((r) => r.id));
  const page = await browser.newPage();
  await page.addInitScript({ content: PAGE_AUDIO });
  await page.goto(server.url);
  await page.click('#call');
  await page.waitForSelector('#status[data-state="connected"]', { timeout: 20_000 });
  const { rows } = await app.pool.query<{ id: string }>("SELECT id FROM calls WHERE team_id = $1 AND type = 'web'", [team.teamId]);
  const fresh = rows.filter((r) => !before.has(r.id));
  assert.equal(fresh.length, 1, 'the click created one web call');
  const callId = fresh[0].id;
  return { page, callId, handle: env.client.workflow.getHandle(callWorkflowId(callId)) };
}

interface CallResult {
  status: string;
  end_reason: string;
  actual_time: string;
  end_time: string;
  transcript_json: { role: string; text: string }[];
  system_notes: { kind: string; data?: Record<string, any> }[];
  recording_url: string | null;
}

async function callResult(callId: string): Promise<CallResult> {
  const res = await app.request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
  assert.equal(res.status, 200, res.text);
  return res.json.call as CallResult;
}

/** Root mean square of one channel of interleaved stereo samples. */
function channelRms(samples: Int16Array, channel: 0 | 1): number {
  let sum = 0;
  let n = 0;
  for (let i = channel; i < samples.length; i += 2) {
    sum += samples[i] * samples[i];
    n++;
  }
  return Math.sqrt(sum / Math.max(1, n));
}

/** The recording through the API: both parties audible, about as long as the call. */
async function assertRecording(callId: string, call: CallResult): Promise<void> {
  assert.ok(call.recording_url?.endsWith(`/api/v1/recordings/${callId}`), `recording_url ${call.recording_url}`);
  const res = await fetch(`${app.url}/api/v1/recordings/${callId}`, { headers: { Authorization: `Bearer ${team.apiKey}` } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'audio/wav');
  const wav = readWav(new Uint8Array(await res.arrayBuffer()));
  assert.equal(wav.channels, 2);
  const seconds = wav.samples.length / 2 / wav.sampleRate;
  const callSeconds = (Date.parse(call.end_time) - Date.parse(call.actual_time)) / 1000;
  assert.ok(Math.abs(seconds - callSeconds) <= 2, `the recording lasts ${seconds.toFixed(2)} s, the call ${callSeconds.toFixed(2)} s`);
  const caller = channelRms(wav.samples, 0);
  const agent = channelRms(wav.samples, 1);
  assert.ok(caller > 100, `the caller's channel is audible (rms ${caller.toFixed(0)})`);
  assert.ok(agent > 100, `the agent's channel is audible (rms ${agent.toFixed(0)})`);
}

const authCheckNote = (call: CallResult) => call.system_notes.find((n) => n.kind === 'auth_check');
const userTurns = (call: CallResult) => call.transcript_json.filter((t) => t.role === 'user').map((t) => t.text);

/**
 * Answers the call's asks in order, each once its prompt has played in the page: asserts
 * the step each answer went to and that the page heard the prompt. Returns when the last
 * answer has been spoken.
 */
async function answerByVoice(page: Page, handle: WorkflowHandle, answers: { step: string; say: string }[]): Promise<Set<string>> {
  const answered = new Set<string>();
  for (const { step, say } of answers) {
    const { ask, peakLevel } = await awaitPromptPlayed(page, handle, answered);
    assert.equal(ask.stepId, step, `the agent asked ${ask.stepId} ("${ask.prompt}") where ${step} was expected`);
    assert.ok(peakLevel > LOUD * 3, `the page heard the prompt of ${step} (peak ${peakLevel.toFixed(4)})`);
    answered.add(ask.scheduledEventId);
    await speakInPage(page, say);
  }
  return answered;
}

test('right answers by voice: every prompt heard in the page, both answers in the transcript, Auth Check verified, the agent hangs up (completed / agent_hangup), the recording as long as the call', async () => {
  const { page, callId, handle } = await startCall();
  try {
    await answerByVoice(page, handle, [
      { step: 'ask_pin', say: 'two nine four six' },
      { step: 'ask_holder', say: 'yes' },
    ]);
    const answeredAt = Date.now();
    // The agent says its last two lines and hangs up: the page shows the call ended.
    await page.waitForSelector('#status[data-state="ended"]', { timeout: 30_000 });
    assert.ok(peak(await levels(page), answeredAt) > LOUD * 3, 'the page heard the closing lines');

    const result = await callResultOrStuck(app.pool, env.client, callId, 30_000);
    assert.deepEqual({ status: result.status, endReason: result.endReason }, { status: 'completed', endReason: 'agent_hangup' });
    const call = await callResult(callId);
    assert.equal(call.end_reason, 'agent_hangup');
    assert.deepEqual(userTurns(call), ['two nine four six', 'yes']);
    assert.deepEqual(
      call.transcript_json.filter((t) => t.role === 'agent').map((t) => t.text),
      ['Hello, this is the account line.', 'Please say your account number, one digit at a time.', 'Are you the account holder?', 'Thank you, you are verified.', 'Goodbye.'],
    );
    const note = authCheckNote(call);
    assert.equal(note?.data?.variables?.verified, true, JSON.stringify(note));
    assert.equal(note?.data?.variables?.matched_count, 2);
    await assertRecording(callId, call);
  } finally {
    await page.close();
  }
});

test('wrong answers by voice fail the Auth Check; the visitor clicks Hang up after the next prompt (hang-up / User Hangup)', async () => {
  const { page, callId, handle } = await startCall();
  try {
    const answered = await answerByVoice(page, handle, [
      { step: 'ask_pin', say: 'five eight two six' },
      { step: 'ask_holder', say: 'no' },
    ]);
    // Not verified: the script asks about a call back; the visitor hangs up once it has played.
    const { ask, peakLevel } = await awaitPromptPlayed(page, handle, answered);
    assert.equal(ask.stepId, 'not_verified');
    assert.ok(peakLevel > LOUD * 3, `the page heard the prompt of not_verified (peak ${peakLevel.toFixed(4)})`);
    await page.click('#hangup');
    await page.waitForSelector('#status[data-state="ended"]', { timeout: 10_000 });

    const result = await callResultOrStuck(app.pool, env.client, callId, 30_000);
    assert.deepEqual({ status: result.status, endReason: result.endReason }, { status: 'hang-up', endReason: 'User Hangup' });
    const call = await callResult(callId);
    assert.equal(call.end_reason, 'User Hangup');
    assert.deepEqual(userTurns(call), ['five eight two six', 'no']);
    const note = authCheckNote(call);
    assert.equal(note?.data?.variables?.verified, false, JSON.stringify(note));
    assert.equal(note?.data?.variables?.matched_count, 0);
    // The unanswered question is in the transcript: what was said stays said.
    assert.equal(call.transcript_json.at(-1)?.text, 'I could not verify you. Would you like a call back?');
    await assertRecording(callId, call);
  } finally {
    await page.close();
  }
});

test('with Whisper and the Silero endpointer (STT_PROVIDER=whisper, ENDPOINTER=silero): a free-text answer is heard within two words of ten, the call completes', async () => {
  whisperSpeech = createSpeechEngines({ STT_PROVIDER: 'whisper' });
  sileroEndpointing = createEndpointing({ ENDPOINTER: 'silero' });
  try {
    await Promise.all([whisperSpeech.warmUp(), sileroEndpointing.warmUp()]);
    const { page, callId, handle } = await startCall(freeTextExample);
    try {
      assert.ok(edge.engines.get(callId)?.endpointer instanceof VoiceEndpointer, 'the call listens with the Silero endpointer');
      await answerByVoice(page, handle, [{ step: 'ask_reason', say: SPOKEN_REASON }]);
      await page.waitForSelector('#status[data-state="ended"]', { timeout: 60_000 });
      const result = await callResultOrStuck(app.pool, env.client, callId, 30_000);
      assert.deepEqual({ status: result.status, endReason: result.endReason }, { status: 'completed', endReason: 'agent_hangup' });
      const call = await callResult(callId);
      // Within two words: Festival's diphone "book" reaches Whisper through Opus as "book",
      // "back" or "look at" from run to run (the Silero cut moves by a frame); the general
      // pocketsphinx model misses most of the sentence.
      const turns = userTurns(call);
      assert.equal(turns.length, 1, `one answer: ${JSON.stringify(turns)}`);
      const heard = wordErrors(SPOKEN_REASON, turns[0]);
      assert.ok(heard.errors <= 2, `"${turns[0]}": ${heard.errors} word errors of ${heard.words}`);
      assert.equal((whisperSpeech.recognizer as WhisperRecognizer).pool.stats.recognised, 1, 'Whisper heard the answer');
    } finally {
      await page.close();
    }
  } finally {
    const [whisper, silero] = [whisperSpeech, sileroEndpointing];
    whisperSpeech = undefined;
    sileroEndpointing = undefined;
    await Promise.all([whisper.close(), silero.close()]);
  }
});
