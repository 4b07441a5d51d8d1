// The offline speech engines on real audio: Festival and espeak-ng synthesising, pocketsphinx
// recognising Festival-spoken answers with the grammars built from answer hints, and the
// engine choice at start-up.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { dbfs } from '../../src/mediaEdge/audio/level.js';
import { EspeakSynthesizer } from '../../src/mediaEdge/speech/espeak.js';
import { FestivalSynthesizer, SynthesisQueueFullError } from '../../src/mediaEdge/speech/festival.js';
import { grammarFor, phraseWords } from '../../src/mediaEdge/speech/grammar.js';
import type { AnswerHint, SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { PocketsphinxRecognizer, POCKETSPHINX_MODEL_DIR, pocketsphinxModelFiles } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { loadPronouncingDictionary } from '../../src/mediaEdge/speech/pronouncingDictionary.js';
import { MAX_CHUNK_CHARS, speakableChunks } from '../../src/mediaEdge/speech/speakableText.js';
import { createSpeechEngines, SpeechConfigError } from '../../src/mediaEdge/speech/speechEngines.js';
import { onLine, spoken } from '../support/spokenAudio.js';
import { eventually } from '../support/eventually.js';

async function collect(synthesizer: SpeechSynthesizer, text: string, signal?: AbortSignal): Promise<{ frames: Int16Array[] }> {
  const frames: Int16Array[] = [];
  for await (const frame of synthesizer.synthesize(text, { signal })) frames.push(frame);
  return { frames };
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

  it('cuts a sentence longer than MAX_CHUNK_CHARS at a comma, else between words, losing no word', () => {
    const clause = 'and then the patient is asked about the medication they take every morning';
    const long = `${Array.from({ length: 8 }, () => clause).join(', ')}.`;
    const pieces = speakableChunks(long);
    assert.ok(pieces.length >= 3, `${pieces.length} pieces`);
    assert.ok(pieces.every((p) => p.length <= MAX_CHUNK_CHARS), pieces.map((p) => p.length).join(' '));
    assert.ok(pieces.slice(0, -1).every((p) => p.endsWith(',')), 'cut after a comma');
    assert.equal(pieces.join(' '), long);
    const unpunctuated = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
    const cut = speakableChunks(unpunctuated);
    assert.ok(cut.length > 1 && cut.every((p) => p.length <= MAX_CHUNK_CHARS));
    assert.equal(cut.join(' '), unpunctuated);
  });
});

describe('festival synthesizer', () => {
  const festival = new FestivalSynthesizer();
  before(() => festival.warmUp());
  after(() => festival.close());

  // How soon the first frame comes is a speed figure: bench/speech.ts measures it.
  it('streams 20 ms frames of 16 kHz speech without leading silence', async () => {
    const { frames } = await collect(festival, 'Hello, this is the clinic calling. Can you confirm your date of birth, please?');
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

describe('festival shared by calls', () => {
  /** Plays `text` for `call` to the end; calls `onFirstFrame` when its first frame comes. */
  async function play(festival: FestivalSynthesizer, text: string, call: object, onFirstFrame?: () => void): Promise<number> {
    let frames = 0;
    for await (const frame of festival.synthesize(text, { call })) {
      void frame;
      if (frames++ === 0) onFirstFrame?.();
    }
    return frames;
  }

  const numbers = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];

  it('is fair: one call’s line is spoken before another call’s long queue of lines drains', async () => {
    const festival = new FestivalSynthesizer({ maxQueuedPerCall: 20 });
    await festival.warmUp();
    try {
      const first = {};
      const second = {};
      const events: string[] = [];
      // The first call queues twelve lines at once (distinct, so none comes from what was kept)...
      const queue = numbers.map((n) => play(festival, `This is line ${n} of the long queue of the first call.`, first).then(() => events.push(`first ${n}`)));
      // ...then the second call says one line.
      const line = play(festival, 'Hello from the second call.', second, () => events.push('second'));
      await Promise.all([...queue, line]);
      const at = events.indexOf('second');
      // Festival renders one sentence at a time and the calls take turns: the first call's
      // sentence in the engine when the second call's line came may finish first, no more.
      assert.ok(at <= 1, `the second call was heard after ${at} of the first call's lines: ${events.join(', ')}`);
      assert.equal(events.length, 13);
    } finally {
      await festival.close();
    }
  });

  it('caps the sentences one call has waiting: a line past FESTIVAL_MAX_QUEUED_PER_CALL fails, other calls are not affected', async () => {
    const festival = new FestivalSynthesizer({ maxQueuedPerCall: 2 });
    await festival.warmUp();
    try {
      const busy = {};
      const [a, b, c, other] = await Promise.allSettled([
        play(festival, 'The first waiting line of this call.', busy),
        play(festival, 'The second waiting line of this call.', busy),
        play(festival, 'The third line, one too many.', busy),
        play(festival, 'A line of another call.', {}),
      ]);
      assert.equal(a.status, 'fulfilled');
      assert.equal(b.status, 'fulfilled');
      assert.ok(c.status === 'rejected' && c.reason instanceof SynthesisQueueFullError, 'the third is refused');
      assert.match((c as PromiseRejectedResult).reason.message, /FESTIVAL_MAX_QUEUED_PER_CALL/);
      assert.ok(other.status === 'fulfilled' && other.value > 20, 'another call speaks');
      assert.equal(festival.stats.refused, 1);
      // Once its lines are done the call speaks again.
      assert.ok((await play(festival, 'The third line, one too many.', busy)) > 20);
    } finally {
      await festival.close();
    }
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

  it('hears free text in a converse turn (latency low: the first decoding pass only)', async () => {
    assert.equal(await recognise('my name is john smith', { expect: 'free', latency: 'low' }), 'my name is john smith');
  });

  it('a converse turn (latency low) asks the process for the first pass only, with tighter pruning; other answers keep every pass', async () => {
    // A stand-in for pocketsphinx_continuous that reads the audio and prints the arguments it was given as its text.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pocketsphinx-args-'));
    const binary = path.join(dir, 'pocketsphinx-args');
    writeFileSync(binary, '#!/bin/sh\ncat > /dev/null\necho "$@"\n', { mode: 0o755 });
    const standIn = new PocketsphinxRecognizer({ binary });
    try {
      const argumentsFor = async (hint: AnswerHint) => {
        const session = standIn.start({ hint });
        session.write(new Int16Array(FRAME_SAMPLES));
        return (await session.finish()).text;
      };
      const low = await argumentsFor({ expect: 'free', latency: 'low' });
      for (const option of ['-fwdflat no', '-bestpath no', '-maxhmmpf 3000']) assert.ok(low.includes(option), `${option} in: ${low}`);
      assert.ok(low.includes('en-us.lm.bin'), 'still the general language model');
      const free = await argumentsFor({ expect: 'free' });
      assert.ok(!free.includes('-fwdflat') && !free.includes('-bestpath'), free);
      const yesNo = await argumentsFor({ expect: 'yes_no', latency: 'low' });
      assert.ok(yesNo.includes('-jsgf') && !yesNo.includes('-fwdflat'), 'a grammar decodes as before');
    } finally {
      await standIn.close();
      rmSync(dir, { recursive: true, force: true });
    }
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

/** The pocketsphinx pipelines this process runs now: its children whose command line names the program. */
function recogniserProcesses(): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('pocketsphinx_continuous')) count++;
    } catch {
      // exited meanwhile
    }
  }
  return count;
}

describe('pocketsphinx processes per edge', () => {
  before(() => spoken('Yes, that is correct.'));

  it('runs at most POCKETSPHINX_MAX_PROCESSES at once: the other sessions wait with their audio and are recognised when a process frees', async () => {
    const capped = new PocketsphinxRecognizer({ maxProcesses: 2, maxWaitMs: 60_000 });
    await capped.warmUp();
    try {
      const sessions = Array.from({ length: 4 }, () => capped.start({ hint: { expect: 'yes_no' } }));
      await eventually(() => capped.slots.running === 2 && capped.slots.queued === 2, 'two sessions running and two waiting');
      // A granted session spawns its process a few turns of the event loop later, not at once.
      await eventually(() => recogniserProcesses() >= 2, 'the two running sessions have their processes');
      assert.equal(recogniserProcesses(), 2, 'two processes, not four');
      const answer = sliceFrames(onLine(await spoken('Yes, that is correct.'), 200, 300));
      for (const session of sessions) for (const frame of answer) session.write(frame);
      const heard = await Promise.all(sessions.map((s) => s.finish()));
      assert.deepEqual(
        heard.map((t) => t.text),
        Array.from({ length: 4 }, () => 'yes that is correct'),
      );
      assert.deepEqual(capped.slots.stats, { peak: 2, waited: 2, refused: 0 });
      await eventually(() => recogniserProcesses() === 0, 'no recogniser process left');
    } finally {
      await capped.close();
    }
  });

  it('an utterance that finds no free process within POCKETSPHINX_MAX_WAIT_MS is answered busy with no text; the next one is heard', async () => {
    const single = new PocketsphinxRecognizer({ maxProcesses: 1, maxWaitMs: 50 });
    await single.warmUp();
    try {
      // A call whose caller has not answered yet holds the only process.
      const holder = single.start({ hint: { expect: 'yes_no' } });
      await eventually(() => single.slots.running === 1, 'one session running');
      const answer = sliceFrames(onLine(await spoken('Yes, that is correct.'), 200, 300));
      const waiting = single.start({ hint: { expect: 'yes_no' } });
      for (const frame of answer) waiting.write(frame);
      assert.deepEqual(await waiting.finish(), { text: '', busy: true });
      assert.equal(single.slots.stats.refused, 1);
      holder.abort();
      await assert.rejects(holder.finish(), /aborted/);
      const next = single.start({ hint: { expect: 'yes_no' } });
      for (const frame of answer) next.write(frame);
      assert.equal((await next.finish()).text, 'yes that is correct');
      assert.equal(single.slots.stats.peak, 1);
    } finally {
      await single.close();
    }
  });

  it('an aborted session leaves the line without taking a process', async () => {
    const single = new PocketsphinxRecognizer({ maxProcesses: 1, maxWaitMs: 60_000 });
    await single.warmUp();
    try {
      const holder = single.start({ hint: { expect: 'yes_no' } });
      await eventually(() => single.slots.running === 1, 'one session running');
      const waiting = single.start({ hint: { expect: 'yes_no' } });
      await eventually(() => single.slots.queued === 1, 'one session waiting');
      waiting.abort();
      await assert.rejects(waiting.finish(), /aborted/);
      assert.equal(single.slots.queued, 0);
      holder.abort();
      await assert.rejects(holder.finish(), /aborted/);
      assert.equal(single.slots.running, 0);
    } finally {
      await single.close();
    }
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

  it('the engines’ limits come from FESTIVAL_MAX_QUEUED_PER_CALL, POCKETSPHINX_MAX_PROCESSES and POCKETSPHINX_MAX_WAIT_MS, checked at start-up', async () => {
    const engines = createSpeechEngines({ POCKETSPHINX_MAX_PROCESSES: '3', POCKETSPHINX_MAX_WAIT_MS: '250', FESTIVAL_MAX_QUEUED_PER_CALL: '' });
    assert.equal((engines.recognizer as PocketsphinxRecognizer).slots.max, 3);
    await engines.close();
    for (const [variable, value, message] of [
      ['POCKETSPHINX_MAX_PROCESSES', '0', 'must be at least 1'],
      ['POCKETSPHINX_MAX_PROCESSES', 'lots', 'must be a number'],
      ['POCKETSPHINX_MAX_WAIT_MS', '-5', 'must be at least 0'],
      ['POCKETSPHINX_MAX_WAIT_MS', '1.5', 'must be a whole number'],
      ['FESTIVAL_MAX_QUEUED_PER_CALL', '100000', 'must be at most 1000'],
    ]) {
      assert.throws(
        () => createSpeechEngines({ [variable]: value }),
        (err: Error) => err instanceof SpeechConfigError && err.variable === variable && err.message === `${variable} ${message} (got "${value}")`,
        `${variable}=${value}`,
      );
    }
  });

  it('a bad value or a missing program stops start-up naming the variable', () => {
    assert.throws(() => createSpeechEngines({ TTS_PROVIDER: 'polly' }), (err: Error) => err instanceof SpeechConfigError && /^TTS_PROVIDER must be one of festival, espeak, piper \(got "polly"\)/.test(err.message));
    assert.throws(() => createSpeechEngines({ STT_PROVIDER: 'kaldi' }), /SpeechConfigError: STT_PROVIDER must be one of pocketsphinx, whisper/);
    assert.throws(() => createSpeechEngines({}, (name) => (name === 'festival' ? undefined : `/usr/bin/${name}`)), /SpeechConfigError: TTS_PROVIDER=festival needs the program festival/);
    assert.throws(() => createSpeechEngines({}, (name) => (name === 'pocketsphinx_continuous' ? undefined : `/usr/bin/${name}`)), /SpeechConfigError: STT_PROVIDER=pocketsphinx needs the program pocketsphinx_continuous/);
  });
});
