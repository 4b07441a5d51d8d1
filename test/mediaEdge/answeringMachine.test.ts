// Voicemail detection: the answering-machine detector's branches on made-up audio (silence,
// noise bursts standing for words, a tone), its accuracy on a slice of the labelled set
// (bench/voicemailSet.ts: voicemail greetings and people picking up, Festival and espeak-ng,
// through the telephone band), and the voicemail drop on a channel: the message waits for
// the beep or the end of the greeting, a person is left to the script.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FRAME_MS, SAMPLE_RATE, type PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import {
  AnsweringMachineDetector,
  BeepDetector,
  DEFAULT_ANSWERING_MACHINE_SETTINGS,
  detectAnsweringMachine,
} from '../../src/mediaEdge/conversation/answeringMachineDetector.js';
import { CallScreener, screenAnsweredCall } from '../../src/mediaEdge/conversation/voicemailDrop.js';
import { ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import type { SpeechRecognizer, SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { beepStartMs, labelledLines, lineAudio } from '../../bench/voicemailSet.js';
import { LoopbackChannel, whiteNoise } from '../support/loopbackChannel.js';
import { spoken } from '../support/spokenAudio.js';
import { overTelephone } from '../support/telephoneBand.js';

const samplesOf = (ms: number) => Math.round((ms * SAMPLE_RATE) / 1000);
const silence = (ms: number) => new Int16Array(samplesOf(ms));
/** Stands for a word: white noise at a speaking level. */
const word = (ms: number, seed = 1) => whiteNoise(samplesOf(ms), -20, seed);
const tone = (hz: number, ms: number, amplitude = 12_000) => Int16Array.from({ length: samplesOf(ms) }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE)));
const line = (...parts: readonly Int16Array[]) => sliceFrames(joinFrames(parts));

describe('answering-machine detector', () => {
  it('calls a line silent longer than the initial silence a machine', () => {
    const result = detectAnsweringMachine(line(silence(4000)));
    assert.equal(result.verdict, 'machine');
    assert.equal(result.reason, 'initial_silence');
    assert.equal(result.decidedAtMs, DEFAULT_ANSWERING_MACHINE_SETTINGS.initialSilenceMs);
  });

  it('hears line noise louder than the silence threshold as silence (the noise floor), not as a greeting', () => {
    const result = detectAnsweringMachine(line(whiteNoise(samplesOf(4000), -36, 3)));
    assert.equal(result.reason, 'initial_silence');
  });

  it('calls a greeting that talks on past the greeting length a machine', () => {
    // Two long words: fewer than the maximum words, more voice than a person's hello.
    const result = detectAnsweringMachine(line(silence(300), word(1000), silence(150), word(1500, 2), silence(3000)));
    assert.equal(result.verdict, 'machine');
    assert.equal(result.reason, 'long_greeting');
    assert.equal(result.words, 2);
    assert.ok(result.greetingMs >= DEFAULT_ANSWERING_MACHINE_SETTINGS.greetingMs, `greeting ${result.greetingMs} ms`);
  });

  it('calls many short words a machine before the greeting is long', () => {
    const parts: Int16Array[] = [silence(300)];
    for (let i = 0; i < 8; i++) parts.push(word(150, i + 1), silence(100));
    const result = detectAnsweringMachine(line(...parts, silence(3000)));
    assert.equal(result.reason, 'max_words');
    assert.equal(result.words, DEFAULT_ANSWERING_MACHINE_SETTINGS.maxWords);
  });

  it('calls a short hello followed by silence a person, one after-greeting silence after it', () => {
    const result = detectAnsweringMachine(line(silence(500), word(400), silence(3000)));
    assert.equal(result.verdict, 'human');
    assert.equal(result.reason, 'after_greeting_silence');
    assert.equal(result.words, 1);
    assert.equal(result.decidedAtMs, 900 + DEFAULT_ANSWERING_MACHINE_SETTINGS.afterGreetingSilenceMs);
  });

  it('calls a spoken "Hello?" over the telephone a person, and a pause before it does not make it a machine', async () => {
    const hello = await spoken('Hello?');
    for (const leadMs of [300, 1800]) {
      const result = detectAnsweringMachine(sliceFrames(overTelephone(joinFrames([silence(leadMs), hello, silence(3000)]))));
      assert.equal(result.verdict, 'human', `after ${leadMs} ms: ${JSON.stringify(result)}`);
    }
  });

  it('counts a click shorter than the minimum word as no word', () => {
    const result = detectAnsweringMachine(line(silence(300), word(60), silence(4000)));
    assert.equal(result.reason, 'initial_silence');
    assert.equal(result.words, 0);
  });

  it('gives no verdict (unknown) when the analysis time runs out undecided', () => {
    const parts: Int16Array[] = [silence(200)];
    for (let i = 0; i < 10; i++) parts.push(word(120, i + 1), silence(800));
    const result = detectAnsweringMachine(line(...parts), { maxWords: 100, totalAnalysisMs: 3000 });
    assert.equal(result.verdict, 'unknown');
    assert.equal(result.reason, 'too_long');
  });

  it('calls a beep a machine at once, and says when it began', () => {
    const result = detectAnsweringMachine(line(silence(600), tone(1000, 400), silence(3000)));
    assert.equal(result.verdict, 'machine');
    assert.equal(result.reason, 'beep');
    assert.equal(result.beepAt, 600);
  });
});

describe('beep detection', () => {
  /** When each confirmed beep began. */
  const beeps = (samples: Int16Array) => {
    const detector = new BeepDetector(DEFAULT_ANSWERING_MACHINE_SETTINGS);
    const found: number[] = [];
    for (const frame of sliceFrames(samples)) {
      const at = detector.push(frame);
      if (at !== undefined) found.push(at);
    }
    return { found, endedAt: detector.beepEndedAt };
  };

  it('finds steady tones across the band, off the frame grid too, over the telephone, and when each ends', () => {
    for (const hz of [440, 1000, 1025, 1400, 1950]) {
      const { found, endedAt } = beeps(overTelephone(joinFrames([silence(500), tone(hz, 400), silence(500)])));
      assert.equal(found.length, 1, `${hz} Hz: ${JSON.stringify(found)}`);
      assert.ok(Math.abs(found[0] - 500) <= FRAME_MS, `${hz} Hz began at ${found[0]} ms`);
      assert.ok(endedAt !== undefined && Math.abs(endedAt - 900) <= 2 * FRAME_MS, `${hz} Hz ended at ${endedAt} ms`);
    }
  });

  it('does not take a tone shorter than the minimum, one outside the band, or noise for a beep', () => {
    assert.deepEqual(beeps(joinFrames([silence(200), tone(1000, 100), silence(500)])).found, []);
    assert.deepEqual(beeps(joinFrames([silence(200), tone(250, 600), silence(500)])).found, []);
    assert.deepEqual(beeps(joinFrames([silence(200), tone(3000, 600), silence(500)])).found, []);
    assert.deepEqual(beeps(whiteNoise(samplesOf(2000), -20, 9)).found, []);
  });

  it('hears no beep in speech', async () => {
    const speech = await spoken("Hi, you've reached Sam's phone. I can't take your call right now, please leave a message after the tone.");
    assert.deepEqual(beeps(overTelephone(speech)).found, []);
    assert.deepEqual(beeps(speech).found, []);
  });
});

describe('accuracy on a slice of the labelled set', () => {
  it('meets the targets: at least 90 % correct, no more than 5 % of people taken for machines', async () => {
    // Every eighth text of each list, by both voices: 10 greetings and 10 people picking up.
    const slice = labelledLines().filter((l) => l.textIndex % 8 === 0);
    const audio = await Promise.all(slice.map((l) => lineAudio(l)));
    const verdicts = slice.map((l, i) => ({ line: l, result: detectAnsweringMachine(sliceFrames(audio[i])) }));
    const machineVerdict = (v: (typeof verdicts)[number]) => v.result.verdict === 'machine';
    const correct = verdicts.filter((v) => machineVerdict(v) === (v.line.label === 'machine')).length;
    const humans = verdicts.filter((v) => v.line.label === 'human');
    const humanAsMachine = humans.filter(machineVerdict);
    const errors = verdicts.filter((v) => machineVerdict(v) !== (v.line.label === 'machine')).map((v) => `${v.line.id}: ${v.result.verdict} (${v.result.reason})`);
    assert.equal(humans.length, 10);
    assert.ok(correct / verdicts.length >= 0.9, `${correct}/${verdicts.length} correct; wrong: ${errors.join(', ')}`);
    assert.ok(humanAsMachine.length / humans.length <= 0.05, `people taken for machines: ${errors.join(', ')}`);
  });
});

/**
 * A channel that plays the callee's audio as fast as the test runs (one frame per
 * macrotask), then silence, and takes the agent's frames one per inbound frame, so the
 * audio clock of both sides is the frame count. With `hangUpAfterMs` the callee hangs up then.
 */
function calleeLine(frames: PcmFrame[], hangUpAfterMs?: number): LoopbackChannel {
  const channel = new LoopbackChannel({ asFastAsPossible: true, hangUpAfterMs });
  void channel.callerSays(joinFrames(frames));
  return channel;
}

/** Says every line as 1 s of a 300 Hz hum (its frames are what the test follows). */
const hum: SpeechSynthesizer = {
  name: 'hum',
  async *synthesize() {
    yield* sliceFrames(tone(300, 1000, 3000));
  },
  warmUp: async () => undefined,
  close: async () => undefined,
};

describe('voicemail drop', () => {
  const MESSAGE = 'Hello Sam, this is Acme calling about your appointment. Please call us back. Goodbye.';

  it('waits for the end of the beep, then says the whole message', async () => {
    const greeting = labelledLines().find((l) => l.id === 'machine-0-festival')!;
    assert.ok(greeting.beepHz !== undefined);
    const channel = calleeLine(sliceFrames(await lineAudio(greeting)));
    const screening = await screenAnsweredCall({ channel, synthesizer: hum, voicemailMessage: MESSAGE });
    assert.equal(screening.outcome, 'voicemail_left');
    assert.equal(screening.detection?.verdict, 'machine');
    assert.equal(screening.message?.cue, 'beep');
    assert.equal(screening.message?.text, MESSAGE);
    assert.equal(screening.message?.playedMs, 1000);
    const beepEnd = (await beepStartMs(greeting))! + 400;
    assert.ok(channel.sentAtMs[0] >= beepEnd, `the message began at ${channel.sentAtMs[0]} ms, the beep ended at ${beepEnd} ms`);
    assert.equal(channel.sent.length, 1000 / FRAME_MS);
    channel.close('local_hangup');
  });

  it('without a beep, waits for the greeting to end before the message', async () => {
    const greeting = labelledLines().find((l) => l.id === 'machine-0-espeak-ng')!;
    assert.equal(greeting.beepHz, undefined);
    const audio = await lineAudio(greeting);
    const channel = calleeLine(sliceFrames(audio));
    const screening = await screenAnsweredCall({ channel, synthesizer: hum, voicemailMessage: MESSAGE });
    assert.equal(screening.outcome, 'voicemail_left');
    assert.equal(screening.message?.cue, 'greeting_end');
    // The greeting's last sound: the line is silent after it (TRAIL_MS of the set).
    const lastVoiceMs = (audio.length * 1000) / SAMPLE_RATE - 4000;
    assert.ok(channel.sentAtMs[0] > lastVoiceMs, `the message began at ${channel.sentAtMs[0]} ms, the greeting ended near ${lastVoiceMs} ms`);
    channel.close('local_hangup');
  });

  it('started at the answer and told the message only later, still hears the greeting from its start and waits for the beep', async () => {
    const greeting = labelledLines().find((l) => l.id === 'machine-0-festival')!;
    const channel = calleeLine(sliceFrames(await lineAudio(greeting)));
    const screener = new CallScreener(channel);
    // The call workflow asks once the verdict is in, long before the beep.
    await new Promise<void>((resolve) => {
      const poll = () => (channel.heardMs >= 4500 ? resolve() : setImmediate(poll));
      poll();
    });
    const screening = await screener.finish({ synthesizer: hum, voicemailMessage: MESSAGE });
    screener.stop();
    assert.equal(screening.outcome, 'voicemail_left');
    assert.ok(screening.detection!.decidedAtMs < 4500, `decided at ${screening.detection!.decidedAtMs} ms`);
    assert.equal(screening.message?.cue, 'beep');
    assert.ok(channel.sentAtMs[0] >= (await beepStartMs(greeting))! + 400);
    channel.close('local_hangup');
  });

  it("says the message through the call's conversation engine when given one (say), after the beep", async () => {
    const greeting = labelledLines().find((l) => l.id === 'machine-0-festival')!;
    const channel = calleeLine(sliceFrames(await lineAudio(greeting)));
    // Nothing is recognised here: the engine only speaks.
    const deaf: SpeechRecognizer = {
      name: 'deaf',
      start: () => ({ write: () => undefined, onPartial: () => () => undefined, finish: async () => ({ text: '' }), abort: () => undefined }),
      warmUp: async () => undefined,
      close: async () => undefined,
    };
    const engine = new ConversationEngine({ channel, synthesizer: hum, recognizer: deaf });
    const screener = new CallScreener(channel);
    const screening = await screener.finish({ say: (text, signal) => engine.speak(text, { signal }), voicemailMessage: MESSAGE });
    screener.stop();
    engine.close();
    assert.equal(screening.outcome, 'voicemail_left');
    assert.equal(screening.message?.cue, 'beep');
    assert.equal(screening.message?.playedMs, 1000);
    assert.equal(channel.sent.length, 1000 / FRAME_MS);
    assert.ok(channel.sentAtMs[0] >= (await beepStartMs(greeting))! + 400);
    channel.close('local_hangup');
  });

  it('leaves a person to the script: nothing is said', async () => {
    const channel = calleeLine(line(silence(400), word(400), silence(3000)));
    const screening = await screenAnsweredCall({ channel, synthesizer: hum, voicemailMessage: MESSAGE });
    assert.equal(screening.outcome, 'human');
    assert.equal(screening.message, undefined);
    assert.equal(channel.sent.length, 0);
    channel.close('local_hangup');
  });

  it('ends on a machine without a message, saying nothing', async () => {
    const channel = calleeLine(line(silence(300), tone(1000, 400), silence(1000)));
    const screening = await screenAnsweredCall({ channel, synthesizer: hum });
    assert.equal(screening.outcome, 'voicemail');
    assert.equal(screening.detection?.reason, 'beep');
    assert.equal(channel.sent.length, 0);
    channel.close('local_hangup');
  });

  it('reports a callee who hangs up before the verdict', async () => {
    const channel = calleeLine(line(silence(300), word(300)), 600);
    const screening = await screenAnsweredCall({ channel, synthesizer: hum, voicemailMessage: MESSAGE });
    assert.equal(screening.outcome, 'channel_closed');
    assert.equal(screening.closeReason, 'remote_hangup');
    assert.equal(screening.detection, undefined);
  });

  it('keeps listening after a machine verdict: the detector still finds the later beep', () => {
    const detector = new AnsweringMachineDetector();
    const frames = line(silence(300), word(1000), silence(100), word(1000, 2), silence(400), tone(850, 400), silence(1000));
    let verdictAt: number | undefined;
    for (const frame of frames) if (detector.push(frame)) verdictAt = detector.heardMs;
    assert.ok(verdictAt !== undefined && verdictAt < 2500);
    assert.equal(detector.beepAt, 2800);
    assert.equal(detector.beepEndedAt, 3200);
  });
});
