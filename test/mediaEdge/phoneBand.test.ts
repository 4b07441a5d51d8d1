// test-runner: foreground (real speech engines and a real-time RTP far end)
// A phone call's media end to end through the conversation engine, on loopback UDP: the real
// RtpMediaChannel (G.711 μ-law at 8 kHz, resampled to the engine's 16 kHz, jitter-buffered),
// the real engines (Festival speaks; pocketsphinx's grammar hears yes/no, Whisper hears a free
// answer), and a test-side far end (test/support/rtpPeer.ts) that sends festival-made speech as
// μ-law packets every 20 ms, keys digits as RFC 4733 events, and decodes what the edge says.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { extractAnswer } from '../../src/domain/authCheck/index.js';
import { resample } from '../../src/mediaEdge/audio/resample.js';
import { ChannelClosedError, ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import { FRAME_MS, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { openRtpSession, type RtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import type { SpeechRecognizer } from '../../src/mediaEdge/speech/interfaces.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { WhisperRecognizer } from '../../src/mediaEdge/speech/whisper.js';
import { PHONE_FRAME, RtpPeer } from '../support/rtpPeer.js';
import { spoken } from '../support/spokenAudio.js';
import { rms } from '../support/webrtcPeer.js';

const PYTHON = path.join(PROJECT_ROOT, '.tools', 'speech-venv', 'bin', 'python');
const PHONE_RATE = 8000;
const INACTIVITY_MS = 1500;

/** The far end's speech: festival at 16 kHz, down to the phone's 8 kHz (the peer encodes μ-law). */
const phoneSpeech = async (text: string) => resample(await spoken(text), SAMPLE_RATE, PHONE_RATE);

/** Runs of 20 ms frames louder than the line's silence, in what the far end heard: [first frame, frames]. */
function speechSpans(samples: number[]): { start: number; frames: number }[] {
  const spans: { start: number; frames: number }[] = [];
  let quiet = 0;
  for (let f = 0; f * PHONE_FRAME < samples.length; f++) {
    const loud = rms(samples.slice(f * PHONE_FRAME, (f + 1) * PHONE_FRAME)) > 300;
    const last = spans.at(-1);
    if (loud && last && quiet < 25) {
      last.frames = f - last.start + 1;
      quiet = 0;
    } else if (loud) {
      spans.push({ start: f, frames: 1 });
      quiet = 0;
    } else quiet++;
  }
  return spans;
}

describe('a phone call through the conversation engine (RTP, G.711 μ-law, 8 kHz ↔ 16 kHz)', () => {
  const synthesizer = new FestivalSynthesizer();
  const grammar = new PocketsphinxRecognizer();
  let whisper: WhisperRecognizer;
  let session: RtpSession;
  let peer: RtpPeer;
  let engine: ConversationEngine;
  /** Agent frames that left the channel. */
  let agentFrames = 0;

  before(async () => {
    assert.ok(existsSync(PYTHON), `${PYTHON} is installed by node scripts/bootstrap.mjs --test`);
    whisper = new WhisperRecognizer({ python: PYTHON, workers: 1 });
    await Promise.all([synthesizer.warmUp(), grammar.warmUp(), whisper.warmUp(), phoneSpeech('Yes, that is correct.'), phoneSpeech('I would like to move my appointment to Friday morning.')]);
  });
  after(async () => {
    await Promise.all([synthesizer.close(), grammar.close(), whisper.close()]);
  });

  async function call(recognizer: SpeechRecognizer): Promise<void> {
    session = await openRtpSession({ portRange: { min: 47_400, max: 47_499 }, bindAddress: '127.0.0.1', inactivityMs: INACTIVITY_MS });
    peer = await RtpPeer.open({ address: '127.0.0.1', port: session.localPort }, { payloadType: 0, telephoneEventPayloadType: 101 });
    session.setRemote({ address: '127.0.0.1', port: peer.port, payloadType: 0, telephoneEventPayloadType: 101 });
    // A telephone sends its microphone's silence all the time.
    peer.keepAlive();
    agentFrames = 0;
    session.channel.onOutbound(() => agentFrames++);
    engine = new ConversationEngine({ channel: session.channel, synthesizer, recognizer, digitTimeoutMs: 1000 });
  }
  afterEach(() => {
    engine.close();
    session.close();
    peer.close();
  });

  /** Resolves once the agent has spoken and then been quiet for 200 ms. */
  async function agentDone(): Promise<void> {
    while (agentFrames === 0) await sleep(20);
    let seen = -1;
    while (seen !== agentFrames) {
      seen = agentFrames;
      await sleep(200);
    }
  }

  it('the prompt reaches the far end as speech of its length, and a spoken yes is recognised by the yes/no grammar', async () => {
    await call(grammar);
    const asking = engine.ask('Is this a good time to talk?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 5000 });
    await agentDone();
    const promptMs = agentFrames * FRAME_MS;
    assert.ok(promptMs > 1000 && promptMs < 4000, `prompt of ${promptMs} ms`);
    await sleep(200);
    const heard = speechSpans(peer.received);
    const heardMs = heard.reduce((ms, s) => ms + s.frames * 20, 0);
    assert.ok(heard.length >= 1 && heard.length <= 3, `one utterance heard, in ${heard.length} pieces`);
    assert.ok(Math.abs(heardMs - promptMs) < 0.25 * promptMs, `the far end heard ${heardMs} ms of speech; ${promptMs} ms were sent`);

    await peer.play(await phoneSpeech('Yes, that is correct.'), { thenSilence: true });
    const answer = await asking;
    assert.equal(answer.kind, 'utterance');
    // Read as the script runner reads a yes/no answer.
    assert.equal(extractAnswer((answer as { text: string }).text, 'yes_no'), 'yes', `heard "${(answer as { text: string }).text}"`);
    assert.equal((answer as { keyed?: true }).keyed, undefined);
  });

  it('digits keyed during the prompt stop it and answer a digits ask', async () => {
    await call(grammar);
    const asking = engine.ask('Please key your account number on your keypad, then press the hash key.', { expect: 'digits' }, { noSpeechTimeoutMs: 5000 });
    while (agentFrames < 15) await sleep(20);
    const framesAtKey = agentFrames;
    await peer.sendDigits('4071#');
    const answer = await asking;
    assert.deepEqual({ kind: answer.kind, text: (answer as { text: string }).text, keyed: (answer as { keyed?: true }).keyed }, { kind: 'utterance', text: '4071', keyed: true });
    assert.ok(agentFrames - framesAtKey < 25, `the prompt stopped at the first key (${(agentFrames - framesAtKey) * FRAME_MS} ms played after it)`);
  });

  it('a free answer over the phone is recognised by Whisper', async () => {
    await call(whisper);
    const asking = engine.ask('How can I help you today?', { expect: 'free' }, { noSpeechTimeoutMs: 5000 });
    await agentDone();
    await peer.play(await phoneSpeech('I would like to move my appointment to Friday morning.'), { thenSilence: true });
    const answer = await asking;
    assert.equal(answer.kind, 'utterance');
    const text = (answer as { text: string }).text;
    for (const word of ['appointment', 'friday', 'morning']) assert.ok(text.includes(word), `"${word}" in "${text}"`);
  });

  it('a far end that goes silent on the wire ends the call media_lost after the inactivity time', async () => {
    await call(grammar);
    const asking = engine.ask('Are you still there?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 30_000 });
    await agentDone();
    peer.stop();
    const stoppedAt = Date.now();
    await assert.rejects(asking, (err: unknown) => err instanceof ChannelClosedError && err.reason === 'media_lost');
    assert.equal(await session.channel.closed, 'media_lost');
    assert.ok(Date.now() - stoppedAt >= INACTIVITY_MS - 100, 'not before the inactivity time');
  });
});
