// Endpointing on voice activity (Silero VAD, the model the npm package ships, run for real):
// speech made at test time by Festival and espeak-ng against white noise at speech level,
// the hangover that shortens once an answer is complete, barge-in that noise does not
// trigger, and the settings. Times are the frames' own (20 ms each), never the wall clock.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, type PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { Endpointer, type EndpointEvent, type SpeechEndpointer } from '../../src/mediaEdge/audio/endpointing.js';
import { createEndpointing } from '../../src/mediaEdge/audio/endpointingConfig.js';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { SileroVadModel } from '../../src/mediaEdge/audio/sileroVad.js';
import { VoiceEndpointer } from '../../src/mediaEdge/audio/voiceEndpointing.js';
import { impliedDigitCount, isCompleteAnswer } from '../../src/mediaEdge/conversation/answerCompleteness.js';
import { ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import { EspeakSynthesizer } from '../../src/mediaEdge/speech/espeak.js';
import { FallbackRecognizer } from '../../src/mediaEdge/speech/fallbackEngines.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import type { RecognitionSession, SpeechRecognizer, SpeechSynthesizer, Transcript } from '../../src/mediaEdge/speech/interfaces.js';
import { SpeechConfigError } from '../../src/mediaEdge/speech/speechEngines.js';
import { gainFromDb } from '../../src/mediaEdge/audio/level.js';
import { LoopbackChannel, whiteNoise } from '../support/loopbackChannel.js';
import { onLine, spoken } from '../support/spokenAudio.js';

const LONG_LINE = 'Thank you for calling the clinic. Your appointment is on Monday at nine in the morning. Please bring your insurance card and arrive ten minutes early.';

/** Every start and end (and pause, with `pauses`), frame i arriving at (i + 1) × 20 ms, each push settled before the next. */
async function events(samples: Int16Array, endpointer: SpeechEndpointer, { pauses = false } = {}): Promise<EndpointEvent[]> {
  const found: EndpointEvent[] = [];
  const frames = sliceFrames(samples);
  for (let i = 0; i < frames.length; i++) {
    const event = await endpointer.push(frames[i], (i + 1) * FRAME_MS);
    if (event && (pauses || event.type !== 'speech_pause')) found.push(event);
  }
  return found;
}

const ms = (samples: Int16Array) => (samples.length * 1000) / SAMPLE_RATE;

function assertNear(actual: number, expected: number, tolerance: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual} ms, expected ${expected} ± ${tolerance} ms`);
}

/** A recogniser standing in for one that tells its text before the end (as Deepgram's interim results do): after `afterFrames` frames it reports `text` as its partial, and answers it. */
class PartialTextRecognizer implements SpeechRecognizer {
  readonly name = 'partial-text';
  constructor(
    private readonly text: string,
    private readonly afterFrames: number,
  ) {}
  start(): RecognitionSession {
    const listeners = new Set<(text: string) => void>();
    let frames = 0;
    return {
      write: () => {
        if (++frames === this.afterFrames) for (const listener of listeners) listener(this.text);
      },
      onPartial: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      finish: async (): Promise<Transcript> => ({ text: this.text }),
      abort: () => undefined,
    };
  }
  async warmUp(): Promise<void> {}
  async close(): Promise<void> {}
}

/** A prompt of a tenth of a second of quiet, for asks whose prompt does not matter. */
const quietPrompt: SpeechSynthesizer = {
  name: 'quiet',
  async *synthesize() {
    for (let i = 0; i < 5; i++) yield new Int16Array(FRAME_SAMPLES);
  },
  warmUp: async () => undefined,
  close: async () => undefined,
};

describe('voice-activity endpointing (Silero VAD)', () => {
  let model: SileroVadModel;
  const festival = new FestivalSynthesizer();
  const espeak = new EspeakSynthesizer();
  const voice = () => new VoiceEndpointer(model.classifier());

  before(async () => {
    model = await SileroVadModel.load();
    await Promise.all([festival.warmUp(), spoken('Yes, that is correct.'), spoken('yes'), spoken('stop please'), spoken('one two three four')]);
  });
  after(async () => {
    await Promise.all([model.close(), festival.close(), espeak.close()]);
  });

  it('finds where a sentence spoken by Festival starts and ends, and decides the end one hangover later', async () => {
    const speech = await spoken('Yes, that is correct.');
    const found = await events(onLine(speech, 1000, 1500, -60), voice());
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_end'],
    );
    const [start, end] = found as [Extract<EndpointEvent, { type: 'speech_start' }>, Extract<EndpointEvent, { type: 'speech_end' }>];
    assertNear(start.at, 1000, 100, 'start');
    assertNear(end.at, 1000 + ms(speech), 100, 'end');
    assert.equal(end.reason, 'silence');
    // The free-speech hangover, in whole 32 ms windows.
    assertNear(end.detectedAt - end.at, 512, 32, 'hangover');
  });

  it('reports the pause before the end once, 150 ms into the quiet (whole windows), before the hangover decides the end', async () => {
    const speech = await spoken('Yes, that is correct.');
    const found = await events(onLine(speech, 1000, 1500, -60), voice(), { pauses: true });
    const [pause, end] = found.slice(-2);
    assert.deepEqual([pause.type, end.type], ['speech_pause', 'speech_end']);
    assert.ok(pause.type === 'speech_pause' && end.type === 'speech_end');
    assert.equal(pause.at, end.at, 'the same end of speech');
    assertNear(pause.detectedAt - pause.at, 160, 32, 'the pause');
  });

  it('finds a sentence spoken by espeak-ng, a voice of another kind, over line noise 25 dB below it', async () => {
    const frames: PcmFrame[] = [];
    for await (const frame of espeak.synthesize('My name is John Smith.')) frames.push(frame);
    const speech = joinFrames(frames);
    const found = await events(onLine(speech, 800, 1200, -45), voice());
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_end'],
    );
    assertNear(found[0].at, 800, 250, 'start');
  });

  it('white noise at speech level starts no turn, where the energy endpointer hears speech in it', async () => {
    for (const level of [-35, -25, -15]) {
      const noise = onLine(whiteNoise(4 * SAMPLE_RATE, level, 3), 1000, 0);
      assert.deepEqual(await events(noise, voice()), [], `noise at ${level} dBFS`);
      // From silence to noise: the energy endpointer's floor is still the silence's.
      assert.equal((await events(noise, new Endpointer()))[0]?.type, 'speech_start', `energy on noise at ${level} dBFS`);
    }
  });

  it('a complete answer ends after the short hangover, free speech after the long one (counted in audio)', async () => {
    const line = onLine(await spoken('yes'), 500, 1200, -60);
    const hangover = async (complete: boolean) => {
      const endpointer = voice();
      const frames = sliceFrames(line);
      for (let i = 0; i < frames.length; i++) {
        const event = await endpointer.push(frames[i], (i + 1) * FRAME_MS);
        // What the engine does when the recogniser's partial text is a whole answer.
        if (event?.type === 'speech_start') endpointer.answerComplete = complete;
        if (event?.type === 'speech_end') return event.detectedAt - event.at;
      }
      assert.fail('no end of speech');
    };
    const complete = await hangover(true);
    const free = await hangover(false);
    assertNear(complete, 256, 32, 'complete answer hangover');
    assertNear(free, 512, 32, 'free speech hangover');
  });

  it('the engine shortens the hangover when the partial text answers the question: yes/no, and the digits the prompt asks for', async () => {
    /** Speech end → text, in frame time, for `said` heard as `text` under `hint`. */
    const turn = async (said: Int16Array, text: string, ask: (engine: ConversationEngine) => ReturnType<ConversationEngine['listen']>) => {
      const channel = new LoopbackChannel({ backgroundDbfs: -65 });
      const engine = new ConversationEngine({
        channel,
        synthesizer: quietPrompt,
        recognizer: new PartialTextRecognizer(text, 20),
        endpointer: voice(),
        now: () => channel.ticks * FRAME_MS,
      });
      try {
        const heard = ask(engine);
        await channel.agentFrames(0);
        await channel.callerSays(onLine(said, 300, 1500));
        const result = await heard;
        assert.ok(result.kind === 'utterance', 'heard an utterance');
        return result.recognitionMs;
      } finally {
        engine.close();
        channel.close();
      }
    };
    const yes = await spoken('yes');
    const digits = await spoken('one two three four');
    const yesNo = await turn(yes, 'yes', (e) => e.listen({ hint: { expect: 'yes_no' }, timeoutMs: 5000 }));
    const free = await turn(yes, 'yes', (e) => e.listen({ hint: { expect: 'free' }, timeoutMs: 5000 }));
    const pin = await turn(digits, 'one two three four', (e) => e.ask('Please say your four digit PIN.', { expect: 'digits' }, { noSpeechTimeoutMs: 5000 }));
    const anyDigits = await turn(digits, 'one two three four', (e) => e.ask('Please say your account number.', { expect: 'digits' }, { noSpeechTimeoutMs: 5000 }));
    assert.ok(yesNo <= 320, `yes/no answer ended ${yesNo} ms after the speech`);
    assert.ok(free >= 480, `free speech ended ${free} ms after the speech`);
    assert.ok(pin <= 320, `four digits asked for ended ${pin} ms after the speech`);
    assert.ok(anyDigits >= 480, `digits of no stated length ended ${anyDigits} ms after the speech`);
  });

  it('a pause tells the latest partial text of a recogniser that streams it unasked (as Deepgram does), behind the cloud fallback too', async () => {
    for (const recognizer of [new PartialTextRecognizer('my name is john smith', 20), new FallbackRecognizer(new PartialTextRecognizer('my name is john smith', 20), new PartialTextRecognizer('never used', 1), () => undefined)]) {
      const channel = new LoopbackChannel({ backgroundDbfs: -65 });
      const engine = new ConversationEngine({ channel, synthesizer: quietPrompt, recognizer, endpointer: voice(), now: () => channel.ticks * FRAME_MS });
      try {
        const pauses: { text: string; at: number }[] = [];
        const heard = engine.listen({ hint: { expect: 'free', latency: 'low' }, timeoutMs: 5000, endSilenceMs: 350, onPause: (text) => pauses.push({ text, at: channel.ticks * FRAME_MS }) });
        await channel.agentFrames(0);
        await channel.callerSays(onLine(await spoken('my name is john smith'), 300, 1500));
        const result = await heard;
        assert.ok(result.kind === 'utterance');
        assert.ok(pauses.length >= 1, `${recognizer.name}: a pause was told`);
        assert.deepEqual(pauses.at(-1)?.text, 'my name is john smith');
        assert.ok(pauses.at(-1)!.at < result.recognisedAt, 'before the answer');
      } finally {
        engine.close();
        channel.close();
      }
    }
  });

  it('barge-in on voice: line noise at speech level does not cut the agent off, the caller speaking does', async () => {
    const bargeIn = async (endpointer: SpeechEndpointer) => {
      const channel = new LoopbackChannel();
      const engine = new ConversationEngine({ channel, synthesizer: festival, recognizer: new PartialTextRecognizer('', 1), endpointer });
      try {
        const speaking = engine.speak(LONG_LINE, { bargeIn: true });
        let settled = false;
        void speaking.finally(() => (settled = true));
        await channel.agentFrames(10);
        await channel.callerSays(whiteNoise(1.5 * SAMPLE_RATE, -20, 5));
        const cutByNoise = settled;
        const sentAtSpeech = channel.sent.length;
        void channel.callerSays(await spoken('stop please'));
        const result = await speaking;
        return { cutByNoise, interrupted: result.interrupted, framesAfterSpeech: channel.sent.length - sentAtSpeech };
      } finally {
        engine.close();
        channel.close();
      }
    };
    const silero = await bargeIn(voice());
    assert.equal(silero.cutByNoise, false, 'noise cut the agent off');
    assert.equal(silero.interrupted, true);
    // The "st" of "stop" (about 190 ms) is not voice to the model after the noise, then three
    // voice windows (96 ms) and the window boundaries: more than the energy endpointer's 100 ms.
    assert.ok(silero.framesAfterSpeech <= 18, `${silero.framesAfterSpeech} frames sent after the caller started`);
    const energy = await bargeIn(new Endpointer());
    assert.equal(energy.cutByNoise, true, 'the energy endpointer takes the noise for the caller');
  });

  it("barge-in: the agent's own echo (30 dB down, 120 ms late) does not cut it off; the caller talking over the echo does", async () => {
    const stop = await spoken('stop please');
    /** The line returns the agent's audio; `talkAfter`: the caller starts talking over it after that many agent frames. */
    const withEcho = async (echoMarginDb: number | null | undefined, talkAfter?: number) => {
      const channel = new LoopbackChannel();
      const engine = new ConversationEngine({ channel, synthesizer: festival, recognizer: new PartialTextRecognizer('', 1), endpointer: voice(), echoMarginDb });
      const echoGain = gainFromDb(-30);
      let agentFrames = 0;
      for (let i = 0; i < 5; i++) void channel.callerSays(new Int16Array(FRAME_SAMPLES));
      const unsubscribe = channel.onOutbound((frame) => {
        const returned = Int16Array.from(frame, (v) => Math.round(v * echoGain));
        const talk = talkAfter === undefined ? -1 : (agentFrames - talkAfter) * FRAME_SAMPLES;
        if (talk >= 0) for (let i = 0; i < FRAME_SAMPLES && talk + i < stop.length; i++) returned[i] += stop[talk + i];
        agentFrames++;
        void channel.callerSays(returned);
      });
      try {
        const result = await engine.speak('Please hold while I check your details.', { bargeIn: true });
        return { interrupted: result.interrupted, agentFrames };
      } finally {
        unsubscribe();
        engine.close();
        channel.close();
      }
    };
    const gated = await withEcho(undefined);
    assert.equal(gated.interrupted, false, 'the echo cut the agent off');
    assert.ok(gated.agentFrames * FRAME_MS > 1500, `played ${gated.agentFrames * FRAME_MS} ms`);
    const ungated = await withEcho(null);
    assert.equal(ungated.interrupted, true, 'without the gate the model hears the echo as voice');
    const talkedOver = await withEcho(undefined, 30);
    assert.equal(talkedOver.interrupted, true, 'the caller talking over the echo');
    assert.ok(talkedOver.agentFrames < 30 + 25, `${talkedOver.agentFrames - 30} agent frames after the caller started`);
  });

  it('a voice-activity model that fails during a call leaves it to the energy endpointer: the caller is still heard', async () => {
    /** Listens while the caller speaks from 1 s on; the model fails at window `failAt`. */
    const heardWith = async (failAt: number) => {
      const classifier = model.classifier();
      let windows = 0;
      const failing = { speechProbability: (window: Int16Array) => (++windows >= failAt ? Promise.reject(new Error('model gone')) : classifier.speechProbability(window)) };
      const channel = new LoopbackChannel({ backgroundDbfs: -65 });
      const errors: Error[] = [];
      const engine = new ConversationEngine({
        channel,
        synthesizer: quietPrompt,
        recognizer: new PartialTextRecognizer('yes that is correct', 1_000_000),
        endpointer: new VoiceEndpointer(failing),
        onEndpointerError: (err) => errors.push(err),
        now: () => channel.ticks * FRAME_MS,
      });
      try {
        const listening = engine.listen({ hint: { expect: 'yes_no' }, timeoutMs: 5000 });
        void channel.callerSays(onLine(await spoken('Yes, that is correct.'), 1000, 1000));
        const result = await listening;
        return { result, errors, endpointer: engine.endpointer };
      } finally {
        engine.close();
        channel.close();
      }
    };
    // Before the caller speaks (window 20: 640 ms): the energy endpointer finds the utterance.
    const before = await heardWith(20);
    assert.equal(before.result.kind, 'utterance');
    assert.equal(before.errors.length, 1);
    assert.equal(before.errors[0].message, 'model gone');
    assert.ok(before.endpointer instanceof Endpointer);
    // In the middle of the answer (window 40: 1280 ms): the utterance ends there and is recognised.
    const during = await heardWith(40);
    assert.ok(during.result.kind === 'utterance', 'heard an utterance');
    assertNear(during.result.speechEndedAt, 40 * 32, 60, 'the utterance ends where the model failed');
  });

  it('settings: energy by default, silero by ENDPOINTER, hangovers configurable, bad values named', async () => {
    assert.equal(createEndpointing({}).kind, 'energy');
    assert.equal(createEndpointing({}).echoMarginDb, 25);
    assert.equal(createEndpointing({ ENDPOINTER_ECHO_MARGIN_DB: '30' }).echoMarginDb, 30);
    assert.equal(createEndpointing({ ENDPOINTER_ECHO_MARGIN_DB: 'off' }).echoMarginDb, null);
    const energy = createEndpointing({ ENDPOINTER_END_SILENCE_MS: '700', ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS: '200' }).create() as Endpointer;
    assert.equal(energy.settings.endSilenceMs, 700);
    assert.equal(energy.settings.completeAnswerSilenceMs, 200);
    assert.equal(createEndpointing({}).settings.ENDPOINTER_CONVERSE_END_SILENCE_MS, 350);
    assert.equal(createEndpointing({ ENDPOINTER_CONVERSE_END_SILENCE_MS: '600' }).settings.ENDPOINTER_CONVERSE_END_SILENCE_MS, 600);
    assert.equal((createEndpointing({}).create() as Endpointer).settings.pauseMs, 150);
    assert.equal((createEndpointing({ ENDPOINTER_CONVERSE_PAUSE_MS: '200' }).create() as Endpointer).settings.pauseMs, 200);
    assert.equal(createEndpointing({ ENDPOINTER_CONVERSE_PAUSE_MS: 'off' }).energySettings.pauseMs, Number.POSITIVE_INFINITY, 'the energy endpointer a failed Silero model leaves a call to keeps it off too');
    // off: the caller's pauses are not reported, so no converse turn asks the model before the answer is recognised.
    const noPauses = createEndpointing({ ENDPOINTER_CONVERSE_PAUSE_MS: 'off' }).create();
    const heard = await events(onLine(await spoken('Yes, that is correct.'), 500, 1000, -60), noPauses, { pauses: true });
    assert.deepEqual(heard.map((e) => e.type), ['speech_start', 'speech_end']);

    const silero = createEndpointing({ ENDPOINTER: 'silero', ENDPOINTER_VAD_THRESHOLD: '0.6' });
    assert.throws(() => silero.create(), /not loaded/);
    await silero.warmUp();
    const endpointer = silero.create() as VoiceEndpointer;
    assert.ok(endpointer instanceof VoiceEndpointer);
    assert.equal(endpointer.settings.threshold, 0.6);
    assert.ok(Math.abs(endpointer.settings.negThreshold - 0.45) < 1e-9);
    await silero.close();

    for (const [config, variable] of [
      [{ ENDPOINTER: 'webrtc' }, 'ENDPOINTER'],
      [{ ENDPOINTER_END_SILENCE_MS: 'soon' }, 'ENDPOINTER_END_SILENCE_MS'],
      [{ ENDPOINTER_END_SILENCE_MS: '50' }, 'ENDPOINTER_END_SILENCE_MS'],
      [{ ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS: '800' }, 'ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS'],
      [{ ENDPOINTER_CONVERSE_END_SILENCE_MS: '20' }, 'ENDPOINTER_CONVERSE_END_SILENCE_MS'],
      [{ ENDPOINTER_CONVERSE_END_SILENCE_MS: 'quick' }, 'ENDPOINTER_CONVERSE_END_SILENCE_MS'],
      [{ ENDPOINTER_CONVERSE_PAUSE_MS: 'soon' }, 'ENDPOINTER_CONVERSE_PAUSE_MS'],
      [{ ENDPOINTER_CONVERSE_PAUSE_MS: '20' }, 'ENDPOINTER_CONVERSE_PAUSE_MS'],
      [{ ENDPOINTER_CONVERSE_PAUSE_MS: '350' }, 'ENDPOINTER_CONVERSE_PAUSE_MS'],
      [{ ENDPOINTER_VAD_THRESHOLD: '1.5' }, 'ENDPOINTER_VAD_THRESHOLD'],
      [{ ENDPOINTER_ECHO_MARGIN_DB: 'loud' }, 'ENDPOINTER_ECHO_MARGIN_DB'],
      [{ ENDPOINTER_ECHO_MARGIN_DB: '3' }, 'ENDPOINTER_ECHO_MARGIN_DB'],
    ] as const) {
      assert.throws(
        () => createEndpointing(config),
        (err: unknown) => err instanceof SpeechConfigError && err.variable === variable && err.message.startsWith(variable),
        JSON.stringify(config),
      );
    }
  });

  it('start-up names a missing voice-activity model or runtime, and weights that do not load', async () => {
    for (const files of [{ weights: '/nonexistent/silero_vad.onnx' }, { onnxRuntimeBinding: '/nonexistent/onnxruntime_binding.node' }]) {
      const missing = Object.values(files)[0];
      assert.throws(
        () => createEndpointing({ ENDPOINTER: 'silero' }, files),
        (err: unknown) => err instanceof SpeechConfigError && err.variable === 'ENDPOINTER' && err.message === `ENDPOINTER=silero needs ${missing}, which is missing (npm install)`,
      );
    }
    assert.equal(createEndpointing({}, { weights: '/nonexistent/silero_vad.onnx' }).kind, 'energy', 'not needed by the energy endpointer');
    // There, but not a model: warm-up stops start-up naming ENDPOINTER.
    const broken = path.join(mkdtempSync(path.join(os.tmpdir(), 'silero-')), 'broken.onnx');
    writeFileSync(broken, 'not a model');
    const endpointing = createEndpointing({ ENDPOINTER: 'silero' }, { weights: broken });
    await assert.rejects(endpointing.warmUp(), (err: unknown) => err instanceof SpeechConfigError && err.variable === 'ENDPOINTER' && err.message.startsWith('ENDPOINTER=silero does not work: '));
    rmSync(path.dirname(broken), { recursive: true, force: true });
  });

  it('a complete answer is read from the partial text with the answer rules; the digits from the question', () => {
    assert.equal(isCompleteAnswer('yes_no', 'yes', undefined), true);
    assert.equal(isCompleteAnswer('yes_no', "that's right", undefined), true);
    assert.equal(isCompleteAnswer('yes_no', 'well let me think', undefined), false);
    assert.equal(isCompleteAnswer('digits', 'one two three', 4), false);
    assert.equal(isCompleteAnswer('digits', 'one two three four', 4), true);
    assert.equal(isCompleteAnswer('digits', '1234', 4), true);
    assert.equal(isCompleteAnswer('digits', 'one two three four', undefined), false);
    assert.equal(isCompleteAnswer('free', 'yes', undefined), false);
    assert.equal(impliedDigitCount('Please say your 5-digit zip code.'), 5);
    assert.equal(impliedDigitCount('What are the last four digits of your card?'), 4);
    assert.equal(impliedDigitCount('Say your six digit code'), 6);
    assert.equal(impliedDigitCount('What is your account number?'), undefined);
    assert.equal(impliedDigitCount('Enter the digits of your code'), undefined);
  });
});
