// Cloud engines failing during a call: the engines of a call made by createSpeechEngines
// with Deepgram and ElevenLabs pointed at their local fakes, and the real offline engines
// behind them (pocketsphinx hears Festival-spoken answers, Festival speaks). One failure is
// retried on the cloud engine; a second hands the call to the offline engine for the rest
// of the call, reported once; other calls still use the cloud engine. Also the start-up
// checks of the cloud settings.
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { dbfs } from '../../src/mediaEdge/audio/level.js';
import { failoverNote, type EngineFailover } from '../../src/mediaEdge/speech/fallbackEngines.js';
import type { AnswerHint, SpeechRecognizer, SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { createSpeechEngines, SpeechConfigError, type SpeechEngines, type SpeechEnginesConfig } from '../../src/mediaEdge/speech/speechEngines.js';
import { FakeDeepgram } from '../support/fakeDeepgram.js';
import { FakeElevenLabs, fakeSpeech } from '../support/fakeElevenLabs.js';
import { ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import { createLogger } from '../../src/logging/logger.js';
import { callSpeechOf, conversationOf } from '../../src/mediaEdge/voiceEdge.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';
import { onLine, spoken } from '../support/spokenAudio.js';

async function hear(recognizer: SpeechRecognizer, text: string, hint: AnswerHint): Promise<string> {
  const session = recognizer.start({ hint });
  for (const frame of sliceFrames(onLine(await spoken(text), 200, 300))) session.write(frame);
  return (await session.finish()).text;
}

async function say(synthesizer: SpeechSynthesizer, text: string): Promise<Int16Array> {
  const frames: Int16Array[] = [];
  for await (const frame of synthesizer.synthesize(text, { call: {} })) frames.push(frame);
  return joinFrames(frames);
}

describe('a cloud engine failing during a call', () => {
  let deepgram: FakeDeepgram;
  let elevenLabs: FakeElevenLabs;
  let engines: SpeechEngines;
  before(async () => {
    deepgram = await FakeDeepgram.start('dg-key');
    elevenLabs = await FakeElevenLabs.start('xi-key');
    engines = createSpeechEngines({
      STT_PROVIDER: 'deepgram',
      DEEPGRAM_API_KEY: 'dg-key',
      DEEPGRAM_BASE_URL: deepgram.baseUrl,
      TTS_PROVIDER: 'elevenlabs',
      ELEVENLABS_API_KEY: 'xi-key',
      ELEVENLABS_BASE_URL: elevenLabs.baseUrl,
      SPEECH_CLOUD_CONNECT_TIMEOUT_MS: '2000',
      SPEECH_CLOUD_ANSWER_TIMEOUT_MS: '300',
    });
    await engines.warmUp();
  });
  after(async () => {
    await engines.close();
    await Promise.all([deepgram.close(), elevenLabs.close()]);
  });
  beforeEach(() => {
    deepgram.behaviour = 'normal';
    deepgram.nextBehaviours = [];
    deepgram.streams = 0;
    deepgram.transcripts = ['yeah sure'];
    elevenLabs.behaviour = 'normal';
    elevenLabs.nextBehaviours = [];
    elevenLabs.requests.length = 0;
  });

  /** One call's engines and the failovers they report. */
  function call() {
    const failovers: EngineFailover[] = [];
    return { ...engines.forCall((failover) => failovers.push(failover)), failovers };
  }

  it('the configured engines are the cloud ones, with festival and pocketsphinx behind them', () => {
    assert.equal(engines.recognizer.name, 'deepgram');
    assert.equal(engines.synthesizer.name, 'elevenlabs');
  });

  it('recognition: Deepgram answering hears the call; no failover', async () => {
    const { recognizer, failovers } = call();
    assert.equal(await hear(recognizer, 'Yes.', { expect: 'yes_no' }), 'yeah sure');
    assert.equal(deepgram.streams, 1);
    assert.deepEqual(failovers, []);
  });

  it('recognition: a stream that dies once is retried on Deepgram with the whole utterance', async () => {
    deepgram.nextBehaviours = ['close_mid_stream'];
    const { recognizer, failovers } = call();
    assert.equal(await hear(recognizer, 'Yes.', { expect: 'yes_no' }), 'yeah sure');
    assert.equal(deepgram.streams, 2);
    const retry = deepgram.requests.at(-1)!;
    assert.ok(retry.audioBytes > (await spoken('Yes.')).length * 2, 'the retry got the utterance from its start');
    assert.deepEqual(failovers, []);
  });

  it('recognition: Deepgram dying twice hands the utterance and the rest of the call to pocketsphinx, reported once', async () => {
    deepgram.behaviour = 'close_mid_stream';
    const { recognizer, failovers } = call();
    assert.equal(await hear(recognizer, 'Yes, that is correct.', { expect: 'yes_no' }), 'yes that is correct', 'pocketsphinx heard the replayed utterance');
    assert.equal(deepgram.streams, 2, 'one retry');
    assert.equal(failovers.length, 1);
    assert.deepEqual({ ...failovers[0], error: undefined }, { stage: 'recognition', failed: 'deepgram', fallback: 'pocketsphinx', error: undefined });
    assert.match(failovers[0].error, /Deepgram: the stream closed before the answer \(1011/);
    assert.match(failoverNote(failovers[0]), /^The speech recognition engine deepgram failed twice \(Deepgram: .*\); pocketsphinx took over for the rest of the call\.$/);

    deepgram.behaviour = 'normal';
    assert.equal(await hear(recognizer, 'No.', { expect: 'yes_no' }), 'no', 'the next utterance goes to pocketsphinx');
    assert.equal(deepgram.streams, 2, 'without trying Deepgram again');
    assert.equal(failovers.length, 1, 'reported once');

    // Another call is not affected.
    const other = call();
    assert.equal(await hear(other.recognizer, 'Yes.', { expect: 'yes_no' }), 'yeah sure');
    assert.equal(deepgram.streams, 3);
  });

  it('recognition: a Deepgram that never answers costs two answer timeouts, then pocketsphinx answers', async () => {
    deepgram.behaviour = 'silent';
    const { recognizer, failovers } = call();
    assert.equal(await hear(recognizer, 'Yes.', { expect: 'yes_no' }), 'yes');
    assert.equal(failovers.length, 1);
    assert.match(failovers[0].error, /no answer within 300 ms/);
  });

  it('synthesis: ElevenLabs closing mid-line twice: Festival says the line, and the rest of the call', async () => {
    elevenLabs.behaviour = 'close_mid_stream';
    const { synthesizer, failovers } = call();
    const audio = await say(synthesizer, 'Thank you for calling.');
    assert.equal(elevenLabs.requests.length, 2, 'one retry');
    assert.equal(failovers.length, 1);
    assert.deepEqual({ ...failovers[0], error: undefined }, { stage: 'synthesis', failed: 'elevenlabs', fallback: 'festival', error: undefined });
    assert.match(failovers[0].error, /ElevenLabs: the stream closed before the end of the line \(1011/);
    // The two cut-off starts (a 440 Hz tone), then Festival's whole line.
    assert.ok(audio.length > 16_000 * 0.8 && dbfs(audio) > -40, 'Festival spoke the line');

    elevenLabs.behaviour = 'normal';
    await say(synthesizer, 'Goodbye.');
    assert.equal(elevenLabs.requests.length, 2, 'the next line goes to Festival without trying ElevenLabs');
    assert.equal(failovers.length, 1);
  });

  it('synthesis: a line ElevenLabs leaves unanswered once is retried and played from ElevenLabs', async () => {
    elevenLabs.nextBehaviours = ['silent'];
    const { synthesizer, failovers } = call();
    const audio = await say(synthesizer, 'Hello.');
    assert.equal(elevenLabs.requests.length, 2);
    assert.deepEqual(audio.subarray(0, fakeSpeech('Hello.', 16000).length), fakeSpeech('Hello.', 16000), 'the retry’s audio');
    assert.deepEqual(failovers, []);
  });

  describe('on the edge: the call’s next answer to the workflow carries a speech_engine System Note', () => {
    let channel: LoopbackChannel;
    let engine: ConversationEngine;
    let conversation: ReturnType<typeof conversationOf>;
    beforeEach(() => {
      const speech = callSpeechOf(engines, createLogger('silent'));
      channel = new LoopbackChannel();
      engine = new ConversationEngine({ channel, synthesizer: speech.synthesizer, recognizer: speech.recognizer });
      conversation = conversationOf(engine, speech.takeNotes);
    });
    afterEach(() => {
      engine.close();
      channel.close();
    });

    it('a line Festival had to say: the speak answer carries the note, once', async () => {
      elevenLabs.behaviour = 'close_mid_stream';
      const signal = new AbortController().signal;
      const first = await conversation.speak('Hi there.', { bargeIn: false, signal });
      assert.equal(first.systemNotes?.length, 1);
      const [note] = first.systemNotes!;
      assert.equal(note.kind, 'speech_engine');
      assert.match(note.text, /^The speech synthesis engine elevenlabs failed twice \(ElevenLabs: .*\); festival took over for the rest of the call\.$/);
      assert.deepEqual(note.data, { stage: 'synthesis', failed: 'elevenlabs', fallback: 'festival' });
      assert.ok(!Number.isNaN(Date.parse(note.at)));
      const second = await conversation.speak('Bye.', { bargeIn: false, signal });
      assert.equal(second.systemNotes, undefined, 'said once');
    });

    it('an answer pocketsphinx had to hear: the ask answer carries the note with the text', async () => {
      deepgram.behaviour = 'close_mid_stream';
      const asking = conversation.ask('Ready?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 4_000, signal: new AbortController().signal });
      await channel.agentFrames(1);
      await channel.drained();
      await channel.callerSays(onLine(await spoken('Yes.'), 0, 600));
      const heard = await asking;
      assert.equal(heard.kind, 'utterance');
      assert.ok(heard.kind === 'utterance' && heard.text === 'yes', JSON.stringify(heard));
      assert.deepEqual(heard.systemNotes?.map((n) => n.data), [{ stage: 'recognition', failed: 'deepgram', fallback: 'pocketsphinx' }]);
    });
  });
});

describe('start-up checks of the cloud engines', () => {
  const everything = (name: string): string | undefined => `/usr/bin/${name}`;
  const rejects = (config: SpeechEnginesConfig, message: RegExp, variable: string, lookUp = everything) =>
    assert.throws(
      () => createSpeechEngines(config, lookUp),
      (err: Error) => err instanceof SpeechConfigError && err.variable === variable && message.test(err.message),
    );

  it('a chosen cloud engine without its key is named', () => {
    rejects({ STT_PROVIDER: 'deepgram' }, /^STT_PROVIDER=deepgram needs DEEPGRAM_API_KEY$/, 'DEEPGRAM_API_KEY');
    rejects({ TTS_PROVIDER: 'elevenlabs', ELEVENLABS_API_KEY: '  ' }, /^TTS_PROVIDER=elevenlabs needs ELEVENLABS_API_KEY$/, 'ELEVENLABS_API_KEY');
  });

  it('a bad base URL, model, voice, output format or timeout is named', () => {
    rejects({ STT_PROVIDER: 'deepgram', DEEPGRAM_API_KEY: 'k', DEEPGRAM_BASE_URL: 'https://api.deepgram.com' }, /^DEEPGRAM_BASE_URL must be a ws:\/\/ or wss:\/\/ URL \(got "https:\/\/api\.deepgram\.com"\)$/, 'DEEPGRAM_BASE_URL');
    rejects({ ELEVENLABS_BASE_URL: 'not a url' }, /^ELEVENLABS_BASE_URL must be a URL/, 'ELEVENLABS_BASE_URL');
    rejects({ ELEVENLABS_BASE_URL: 'wss://user:pw@api.elevenlabs.io' }, /^ELEVENLABS_BASE_URL must not carry credentials/, 'ELEVENLABS_BASE_URL');
    rejects({ DEEPGRAM_MODEL: 'nova 3' }, /^DEEPGRAM_MODEL must be a name/, 'DEEPGRAM_MODEL');
    rejects({ ELEVENLABS_VOICE_ID: '../voices' }, /^ELEVENLABS_VOICE_ID must be a name/, 'ELEVENLABS_VOICE_ID');
    rejects({ ELEVENLABS_OUTPUT_FORMAT: 'mp3_44100_128' }, /^ELEVENLABS_OUTPUT_FORMAT must be one of pcm_16000, ulaw_8000 \(got "mp3_44100_128"\)$/, 'ELEVENLABS_OUTPUT_FORMAT');
    rejects({ SPEECH_CLOUD_ANSWER_TIMEOUT_MS: '50' }, /^SPEECH_CLOUD_ANSWER_TIMEOUT_MS must be a whole number of milliseconds from 100 to 60000 \(got "50"\)$/, 'SPEECH_CLOUD_ANSWER_TIMEOUT_MS');
    rejects({ SPEECH_CLOUD_CONNECT_TIMEOUT_MS: '1.5' }, /^SPEECH_CLOUD_CONNECT_TIMEOUT_MS must be/, 'SPEECH_CLOUD_CONNECT_TIMEOUT_MS');
  });

  it('a key with spaces is refused without being shown', () => {
    assert.throws(
      () => createSpeechEngines({ STT_PROVIDER: 'deepgram', DEEPGRAM_API_KEY: 'abc def-secret' }, everything),
      (err: Error) => err instanceof SpeechConfigError && /^DEEPGRAM_API_KEY must be printable characters without spaces$/.test(err.message) && !err.message.includes('secret'),
    );
  });

  it('a cloud engine needs its offline fallback installed', () => {
    rejects({ TTS_PROVIDER: 'elevenlabs', ELEVENLABS_API_KEY: 'k' }, /^TTS_PROVIDER=elevenlabs needs the program festival/, 'TTS_PROVIDER', (name) => (name === 'festival' ? undefined : `/usr/bin/${name}`));
    rejects({ STT_PROVIDER: 'deepgram', DEEPGRAM_API_KEY: 'k' }, /^STT_PROVIDER=deepgram needs the program pocketsphinx_continuous/, 'STT_PROVIDER', (name) => (name === 'pocketsphinx_continuous' ? undefined : `/usr/bin/${name}`));
  });

  it('an unknown provider names the cloud engines too', () => {
    rejects({ TTS_PROVIDER: 'polly' }, /^TTS_PROVIDER must be one of festival, espeak.* \(got "polly"\), or the cloud engine elevenlabs$/, 'TTS_PROVIDER');
    rejects({ STT_PROVIDER: 'watson' }, /^STT_PROVIDER must be one of pocketsphinx.* \(got "watson"\), or the cloud engine deepgram$/, 'STT_PROVIDER');
  });

  it('the defaults stay offline, and their calls get the shared engines as they are', async () => {
    const engines = createSpeechEngines({});
    assert.equal(engines.synthesizer.name, 'festival');
    assert.equal(engines.recognizer.name, 'pocketsphinx');
    const forCall = engines.forCall(() => assert.fail('no failover'));
    assert.equal(forCall.synthesizer, engines.synthesizer);
    assert.equal(forCall.recognizer, engines.recognizer);
    await engines.close();
  });
});
