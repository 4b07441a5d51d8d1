// The offline speech engines on real audio: Festival and espeak-ng synthesising, pocketsphinx
// recognising Festival-spoken answers with the grammars built from answer hints, and the
// engine choice at start-up.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { dbfs } from '../../src/mediaEdge/audio/level.js';
import { EspeakSynthesizer } from '../../src/mediaEdge/speech/espeak.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import { grammarFor, phraseWords } from '../../src/mediaEdge/speech/grammar.js';
import type { AnswerHint, SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { PocketsphinxRecognizer, POCKETSPHINX_MODEL_DIR, pocketsphinxModelFiles } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { loadPronouncingDictionary } from '../../src/mediaEdge/speech/pronouncingDictionary.js';
import { speakableChunks } from '../../src/mediaEdge/speech/speakableText.js';
import { createSpeechEngines, SpeechConfigError } from '../../src/mediaEdge/speech/speechEngines.js';
import { onLine, spoken } from '../support/spokenAudio.js';

async function collect(synthesizer: SpeechSynthesizer, text: string, signal?: AbortSignal): Promise<{ frames: Int16Array[]; firstFrameMs: number }> {
  const started = performance.now();
  let firstFrameMs = Number.NaN;
  const frames: Int16Array[] = [];
  for await (const frame of synthesizer.synthesize(text, { signal })) {
    if (frames.length === 0) firstFrameMs = performance.now() - started;
    frames.push(frame);
  }
  return { frames, firstFrameMs };
}

describe('grammars from answer hints', () => {
  it('every word of the fixed grammars is in the pronouncing dictionary', async () => {
    const dictionary = await loadPronouncingDictionary(pocketsphinxModelFiles(POCKETSPHINX_MODEL_DIR).dictionary);
    for (const expect of ['yes_no', 'digits', 'number', 'date'] as const) {
      const grammar = grammarFor({ expect })!;
      assert.ok(grammar.jsgf.startsWith('#JSGF V1.0;'));
      assert.deepEqual(
        grammar.words.filter((w) => !dictionary.has(w)),
        [],
        `${expect} grammar`,
      );
    }
  });

  it('free text, and a name without phrases, use the general language model', () => {
    assert.equal(grammarFor({ expect: 'free' }), undefined);
    assert.equal(grammarFor({ expect: 'text', phrases: ['anything'] }), undefined);
    assert.equal(grammarFor({ expect: 'name' }), undefined);
    assert.equal(grammarFor({ expect: 'name', phrases: ['Zxqv Wrtl'] }, { knownWord: (w) => w !== 'zxqv' }), undefined, 'no phrase is left');
  });

  it('a name grammar accepts exactly the phrases (with a lead-in), spelt as grammar words', () => {
    const grammar = grammarFor({ expect: 'name', phrases: ['Jane Doe', 'José O\'Neil-Smith', 'Apartment 4B', 'Jane Doe', 'Zxqv Doe'] }, { knownWord: (w) => w !== 'zxqv' })!;
    assert.match(grammar.jsgf, /<phrase> = \(jane doe\) \| \(jose o'neil smith\) \| \(apartment four b\);/);
    assert.match(grammar.jsgf, /public <name> = \[my name is \|/);
    assert.ok(!grammar.words.includes('zxqv'));
    assert.deepEqual(phraseWords('  Dr. Mary-Jane   2nd '), ['dr', 'mary', 'jane', 'two', 'nd']);
  });

  it('phrases are extra answers for the other kinds', () => {
    const grammar = grammarFor({ expect: 'yes_no', phrases: ['maybe later'] })!;
    assert.match(grammar.jsgf, /public <yes_no> = \(<answer> <answer>\* \| <phrase>\);/);
    assert.ok(grammar.words.includes('maybe') && grammar.words.includes('yes'));
  });
});

describe('text for a synthesiser', () => {
  it('is cut at sentence ends into pieces, short sentences joined, accents and symbols dropped', () => {
    assert.deepEqual(speakableChunks('Hello José. This is the clinic calling about your appointment! Can you confirm your name?  ✓'), [
      'Hello Jose. This is the clinic calling about your appointment!',
      'Can you confirm your name?',
    ]);
    assert.deepEqual(speakableChunks(' ... ?! '), []);
  });
});

describe('festival synthesizer', () => {
  const festival = new FestivalSynthesizer();
  before(() => festival.warmUp());
  after(() => festival.close());

  it('streams 20 ms frames of 16 kHz speech, the first one within 100 ms once warm, without leading silence', async () => {
    const { frames, firstFrameMs } = await collect(festival, 'Hello, this is the clinic calling. Can you confirm your date of birth, please?');
    assert.ok(firstFrameMs < 100, `first frame after ${firstFrameMs.toFixed(1)} ms`);
    assert.ok(frames.every((f) => f.length === FRAME_SAMPLES));
    const seconds = (frames.length * FRAME_SAMPLES) / SAMPLE_RATE;
    assert.ok(seconds > 3 && seconds < 9, `${seconds} s of audio`);
    assert.ok(dbfs(joinFrames(frames)) > -30, 'speech level');
    assert.ok(dbfs(joinFrames(frames.slice(0, 4))) > -45, 'sound within the first 80 ms');
  });

  it('says text with quotes, backslashes and numbers, and nothing for text without words', async () => {
    const { frames } = await collect(festival, 'He said "it\'s 1985" \\ (really)');
    assert.ok(frames.length > 50);
    assert.equal((await collect(festival, ' ?! ')).frames.length, 0);
  });

  it('keeps what it rendered: a line said again is the same audio, served without Festival', async () => {
    const text = 'Is this still a good time to talk? It will only take a minute or two of your time.';
    const rendered = festival.stats.rendered;
    const fromCache = festival.stats.fromCache;
    const first = await collect(festival, text);
    const sentences = festival.stats.rendered - rendered;
    assert.ok(sentences >= 1);
    const again = await collect(festival, text);
    assert.equal(festival.stats.rendered - rendered, sentences, 'nothing rendered the second time');
    assert.equal(festival.stats.fromCache - fromCache, sentences);
    assert.deepEqual(again.frames, first.frames);
  });

  it('stops when aborted, and keeps working afterwards', async () => {
    const abort = new AbortController();
    const frames: Int16Array[] = [];
    for await (const frame of festival.synthesize('One sentence that is long enough to play for a while. And a second one after it.', { signal: abort.signal })) {
      frames.push(frame);
      if (frames.length === 10) abort.abort();
    }
    assert.equal(frames.length, 10);
    assert.ok((await collect(festival, 'Still here.')).frames.length > 20);
  });
});

describe('espeak-ng synthesizer', () => {
  it('streams its 22.05 kHz output as 16 kHz frames', async () => {
    const espeak = new EspeakSynthesizer();
    const { frames } = await collect(espeak, 'yes that is correct');
    assert.ok(frames.every((f) => f.length === FRAME_SAMPLES));
    const seconds = (frames.length * FRAME_SAMPLES) / SAMPLE_RATE;
    assert.ok(seconds > 0.8 && seconds < 2.5, `${seconds} s`);
    assert.ok(dbfs(joinFrames(frames)) > -30);
    await espeak.close();
  });
});

describe('pocketsphinx recognizer', () => {
  const recognizer = new PocketsphinxRecognizer();
  before(() => recognizer.warmUp());
  after(() => recognizer.close());

  async function recognise(text: string, hint: AnswerHint): Promise<string> {
    const session = recognizer.start({ hint });
    for (const frame of sliceFrames(onLine(await spoken(text), 200, 300))) session.write(frame);
    return (await session.finish()).text;
  }

  it('hears "yes that is correct" with the yes/no grammar', async () => {
    assert.equal(await recognise('Yes, that is correct.', { expect: 'yes_no' }), 'yes that is correct');
  });

  it('hears digits said one by one with the digits grammar', async () => {
    assert.equal(await recognise('one nine eight five zero four zero three', { expect: 'digits' }), 'one nine eight five zero four zero three');
  });

  it('hears a name from the phrase list', async () => {
    const hint: AnswerHint = { expect: 'name', phrases: ['John Smith', 'Jane Doe', 'Maria Garcia', 'Peter Jones'] };
    assert.equal(await recognise('My name is Jane Doe.', hint), 'my name is jane doe');
  });

  it('hears a date said as words with the date grammar', async () => {
    assert.equal(await recognise('april third nineteen eighty five', { expect: 'date' }), 'april third nineteen eighty five');
  });

  it('hears free text with the general language model', async () => {
    assert.equal(await recognise('my name is john smith', { expect: 'free' }), 'my name is john smith');
  });

  it('an aborted session stops its process and its finish rejects', async () => {
    const session = recognizer.start({ hint: { expect: 'digits' } });
    session.write(new Int16Array(FRAME_SAMPLES));
    session.abort();
    await assert.rejects(session.finish(), /aborted/);
  });

  it('silence is recognised as nothing', async () => {
    const session = recognizer.start({ hint: { expect: 'yes_no' } });
    for (const frame of sliceFrames(new Int16Array(SAMPLE_RATE))) session.write(frame);
    assert.equal((await session.finish()).text, '');
  });
});

describe('engine choice at start-up', () => {
  it('defaults to festival and pocketsphinx', async () => {
    const engines = createSpeechEngines({});
    assert.equal(engines.synthesizer.name, 'festival');
    assert.equal(engines.recognizer.name, 'pocketsphinx');
    await engines.close();
    const espeak = createSpeechEngines({ TTS_PROVIDER: 'espeak' });
    assert.equal(espeak.synthesizer.name, 'espeak');
    await espeak.close();
  });

  it('a bad value or a missing program stops start-up naming the variable', () => {
    assert.throws(() => createSpeechEngines({ TTS_PROVIDER: 'polly' }), (err: Error) => err instanceof SpeechConfigError && /^TTS_PROVIDER must be one of festival, espeak \(got "polly"\)/.test(err.message));
    assert.throws(() => createSpeechEngines({ STT_PROVIDER: 'whisper' }), /SpeechConfigError: STT_PROVIDER must be one of pocketsphinx/);
    assert.throws(() => createSpeechEngines({}, (name) => (name === 'festival' ? undefined : `/usr/bin/${name}`)), /SpeechConfigError: TTS_PROVIDER=festival needs the program festival/);
    assert.throws(() => createSpeechEngines({}, (name) => (name === 'pocketsphinx_continuous' ? undefined : `/usr/bin/${name}`)), /SpeechConfigError: STT_PROVIDER=pocketsphinx needs the program pocketsphinx_continuous/);
  });
});
