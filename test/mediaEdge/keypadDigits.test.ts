// Keypad digits answering an ask in the conversation engine, over an in-memory channel paced at
// 20 ms that also carries key presses (as a phone call's RFC 4733 events do). The prompt is a
// second of tone and the recogniser a stand-in answering "yes" to any utterance, so what is
// tested is the engine's choice between keys and speech: `#` and the pause end an entry, the
// first key stops the prompt, `input` restricts what answers.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConversationEngine, type ListenResult } from '../../src/mediaEdge/conversation/engine.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import type { AnswerHint, RecognitionSession, SpeechRecognizer, SpeechSynthesizer, Transcript } from '../../src/mediaEdge/speech/interfaces.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';

class KeypadChannel extends LoopbackChannel {
  private readonly digitListeners = new Set<(digit: string) => void>();
  onDigit(listener: (digit: string) => void): () => void {
    this.digitListeners.add(listener);
    return () => this.digitListeners.delete(listener);
  }
  /** The caller presses keys, `gapMs` apart. */
  async press(keys: string, gapMs = 60): Promise<void> {
    for (const key of keys) {
      for (const listener of this.digitListeners) listener(key);
      await sleep(gapMs);
    }
  }
}

/** Every utterance is "yes". */
const yesRecognizer: SpeechRecognizer = {
  name: 'yes',
  start: (): RecognitionSession => ({
    write: () => undefined,
    onPartial: () => () => undefined,
    finish: async (): Promise<Transcript> => ({ text: 'yes' }),
    abort: () => undefined,
  }),
  warmUp: async () => undefined,
  close: async () => undefined,
};

/** A prompt of one second of a 440 Hz tone. */
const tonePrompt: SpeechSynthesizer = {
  name: 'tone',
  async *synthesize() {
    for (let f = 0; f < 50; f++) yield Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 440 * (f * FRAME_SAMPLES + i)) / SAMPLE_RATE)));
  },
  warmUp: async () => undefined,
  close: async () => undefined,
};

/** Half a second of a loud voice-band tone: the energy endpointer hears it as speech. */
const speech = () => Int16Array.from({ length: SAMPLE_RATE / 2 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / SAMPLE_RATE)));

describe('keypad digits answering an ask', () => {
  let channel: KeypadChannel;
  let engine: ConversationEngine;
  function open(digitTimeoutMs = 400): void {
    channel = new KeypadChannel();
    engine = new ConversationEngine({ channel, synthesizer: tonePrompt, recognizer: yesRecognizer, digitTimeoutMs });
  }
  afterEach(() => {
    engine.close();
    channel.close();
  });

  const ask = (hint: AnswerHint, noSpeechTimeoutMs = 2000): Promise<ListenResult> => engine.ask('Please key your account number.', hint, { noSpeechTimeoutMs });

  it('digits keyed after the prompt, ended by #, are the answer, marked keyed', async () => {
    open();
    const asking = ask({ expect: 'digits' });
    await channel.agentFrames(50);
    await channel.press('4071#');
    const heard = await asking;
    assert.deepEqual({ ...heard, speechEndedAt: 0, recognisedAt: 0 }, { kind: 'utterance', text: '4071', speechEndedAt: 0, recognisedAt: 0, recognitionMs: 0, keyed: true });
  });

  it('a pause of the digit timeout ends the entry; a # before any digit is ignored', async () => {
    open(300);
    const asking = ask({ expect: 'digits' });
    await channel.agentFrames(50);
    await channel.press('#12');
    const heard = await asking;
    assert.ok(heard.kind === 'utterance' && heard.keyed);
    assert.equal(heard.text, '12');
  });

  it('the first key stops the prompt (barge-in) and the entry goes on', async () => {
    open();
    const asking = ask({ expect: 'digits' });
    await channel.agentFrames(10);
    await channel.press('9');
    const sentAtKey = channel.sent.length;
    await channel.press('8#');
    const heard = await asking;
    assert.equal(heard.kind === 'utterance' && heard.text, '98');
    assert.ok(channel.sent.length <= sentAtKey + 2, `the prompt went on after the key: ${channel.sent.length} frames, ${sentAtKey} at the key`);
    assert.ok(channel.sent.length < 30);
  });

  it('input "both": speech answers as before, not marked keyed', async () => {
    open();
    const asking = ask({ expect: 'yes_no' });
    await channel.agentFrames(50);
    await channel.callerSays(speech());
    const heard = await asking;
    assert.equal(heard.kind === 'utterance' && heard.text, 'yes');
    assert.equal(heard.kind === 'utterance' && heard.keyed, undefined);
  });

  it('input "dtmf": speech neither barges in nor answers; no key by the timeout is silence', async () => {
    open();
    const asking = ask({ expect: 'digits', input: 'dtmf' }, 600);
    await channel.agentFrames(5);
    await channel.callerSays(speech());
    assert.ok(channel.sent.length >= 30, 'the prompt played on over the speech');
    await channel.drained();
    assert.deepEqual(await asking, { kind: 'silence' });
  });

  it('input "dtmf": keys answer', async () => {
    open();
    const asking = ask({ expect: 'digits', input: 'dtmf' });
    await channel.agentFrames(50);
    await channel.press('55#');
    assert.equal(((await asking) as { text: string }).text, '55');
  });

  it('input "speech": keys neither stop the prompt nor answer', async () => {
    open();
    const asking = ask({ expect: 'yes_no', input: 'speech' }, 800);
    await channel.agentFrames(5);
    await channel.press('1#');
    await channel.drained();
    assert.equal(channel.sent.length, 50, 'the whole prompt played');
    assert.deepEqual(await asking, { kind: 'silence' });
  });

  it('a call that ends during a keyed entry rejects the ask', async () => {
    open(5000);
    const asking = ask({ expect: 'digits' });
    await channel.agentFrames(50);
    await channel.press('1');
    channel.close('remote_hangup');
    await assert.rejects(asking, /closed \(remote_hangup\)/);
  });

  it('on a channel without keys (a browser call) an ask is heard by speech alone', async () => {
    open();
    const plain = new LoopbackChannel();
    const speechOnly = new ConversationEngine({ channel: plain, synthesizer: tonePrompt, recognizer: yesRecognizer });
    try {
      const asking = speechOnly.ask('Yes or no?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 2000 });
      await plain.agentFrames(50);
      await plain.callerSays(speech());
      assert.equal(((await asking) as { text: string }).text, 'yes');
    } finally {
      speechOnly.close();
      plain.close();
    }
  });
});
